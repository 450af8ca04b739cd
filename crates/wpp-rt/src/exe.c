/* The executable's program and memory databases, when the executable is instrumented (see
   dso.rs): weak references, which stable Rust cannot make. In a shared library's process whose
   executable is not instrumented they stay null; so does the memory database of an executable
   not built for trace-addr. */
#include <stdint.h>

extern const uint8_t __wpp_program_db[] __attribute__((weak));
extern const uint64_t __wpp_program_db_len __attribute__((weak));

const uint8_t *wpp_rt_executable_db(uint64_t *len) {
    if (!__wpp_program_db || !&__wpp_program_db_len)
        return 0;
    *len = __wpp_program_db_len;
    return __wpp_program_db;
}

extern const uint8_t __wpp_memory_db[] __attribute__((weak));
extern const uint64_t __wpp_memory_db_len __attribute__((weak));

const uint8_t *wpp_rt_executable_memory_db(uint64_t *len) {
    if (!__wpp_memory_db || !&__wpp_memory_db_len)
        return 0;
    *len = __wpp_memory_db_len;
    return __wpp_memory_db;
}

/* Ends every recording once the program's own exit work is done. `exit` runs the `atexit`
   handlers and C++ static destructors first, then the loader's finalization, which runs the
   executable's destructors (`__attribute__((destructor))`), this one last of them (priority
   101 runs last), and then those of shared libraries, which finish after the executables and
   libraries that use them: so a `libwpp_rt.so` ends the recording after every instrumented
   library's destructors, too. */
void wpp_rt_fini(void);

__attribute__((destructor(101))) static void wpp_rt_end(void) { wpp_rt_fini(); }
