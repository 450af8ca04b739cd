/* The executable's program database, when the executable is instrumented (see dso.rs): weak
   references, which stable Rust cannot make. In a shared library's process whose executable is
   not instrumented they stay null. */
#include <stdint.h>

extern const uint8_t __wpp_program_db[] __attribute__((weak));
extern const uint64_t __wpp_program_db_len __attribute__((weak));

const uint8_t *wpp_rt_executable_db(uint64_t *len) {
    if (!__wpp_program_db || !&__wpp_program_db_len)
        return 0;
    *len = __wpp_program_db_len;
    return __wpp_program_db;
}
