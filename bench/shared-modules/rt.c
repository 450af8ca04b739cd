/* Stand-in for a shared runtime libwpp_rt.so: the per-thread buffer, index and depth are
 * defined once per process here (exported TLS), and modules register to get a base id. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <dlfcn.h>
#define CAP 16384
#ifdef LOCAL_TLS /* today: linked into the executable, thread-locals hidden (local-exec) */
#define VIS __attribute__((visibility("hidden")))
#else
#define VIS
#endif
VIS __thread uint64_t *__wpp_buf;
VIS __thread uint32_t __wpp_idx = CAP;
VIS __thread uint32_t __wpp_depth;
static uint64_t storage[CAP], checksum, events;
static uint64_t next_base;
void __wpp_rt_flush(void) {
    for (uint32_t i = 0; __wpp_buf && i < __wpp_idx; i++) checksum = checksum * 31 + __wpp_buf[i];
    events += __wpp_buf ? __wpp_idx : 0;
    __wpp_buf = storage;
    __wpp_idx = 0;
}
/* Returns the module's base, pre-shifted past the 3 tag bits (one add per Enter). */
/* An instrumented executable exports its function count: its ids are [0, n) whatever order the
 * constructors run in (a DT_NEEDED library's runs first), so its Enter words stay constants. */
static void reserve_executable(void) {
    static int done;
    if (done++) return;
    const uint32_t *n = dlsym(RTLD_DEFAULT, "__wpp_exe_functions");
    if (n) next_base = *n;
}
uint64_t __wpp_rt_register(const char *name, uint32_t functions) {
    reserve_executable();
    uint64_t base = next_base;
    next_base += functions;
    if (getenv("PROTO_VERBOSE")) fprintf(stderr, "register %s: base %llu\n", name, (unsigned long long)base);
    return base << 3;
}
__attribute__((destructor)) static void report(void) {
    __wpp_rt_flush();
    fprintf(stderr, "events %llu checksum %llx\n", (unsigned long long)events, (unsigned long long)checksum);
}
