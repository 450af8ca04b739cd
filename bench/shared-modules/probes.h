/* The inline probes of one instrumented module (what wpp-instrument emits, in C).
 * LOCAL_TLS: today's layout: the module's own internal thread-locals, constant Enter word.
 * otherwise: the runtime's exported thread-locals (initial-exec) and Enter = base + local.
 * WITH_BASE: Enter = base + local with today's thread-locals (the base load's cost alone).
 * EXE_TLS: an executable that defines the thread-locals itself (local-exec, exported, so the
 * libraries' initial-exec references and the runtime bind to them) and has ids [0, n). */
#include <stdint.h>
#define CAP 16384
void __wpp_rt_flush(void);
uint64_t __wpp_rt_register(const char *name, uint32_t functions);
#ifdef LOCAL_TLS
#define TLS_MODEL __attribute__((visibility("hidden"), tls_model("local-exec")))
#elif defined(EXE_TLS)
#define TLS_MODEL __attribute__((tls_model("local-exec")))
#else
#define TLS_MODEL __attribute__((tls_model(TLS_MODEL_NAME)))
#endif
extern __thread uint64_t *__wpp_buf TLS_MODEL;
extern __thread uint32_t __wpp_idx TLS_MODEL;
extern __thread uint32_t __wpp_depth TLS_MODEL;
#ifdef EXE_TLS
__thread uint64_t *__wpp_buf;
__thread uint32_t __wpp_idx = CAP;
__thread uint32_t __wpp_depth;
const uint32_t __wpp_exe_functions = MODULE_FUNCTIONS;
#endif
#if (defined(LOCAL_TLS) && !defined(WITH_BASE)) || defined(EXE_TLS)
#define BASE 0
#else
static uint64_t module_base;
#define BASE module_base
__attribute__((constructor)) static void register_module(void) {
    module_base = __wpp_rt_register(MODULE_NAME, MODULE_FUNCTIONS);
}
#endif
static inline __attribute__((always_inline)) void emit(uint64_t w) {
    if (__builtin_expect(__wpp_idx >= CAP, 0)) __wpp_rt_flush();
    __wpp_buf[__wpp_idx++] = w;
}
#define ENTER(f) (emit(((uint64_t)(f) << 3) + BASE), ++__wpp_depth)
#define LEAVE() (emit(1), --__wpp_depth)
#define BLOCK(b) emit(((uint64_t)(b) << 3) | 2)
