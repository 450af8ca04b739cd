/* An uninstrumented executable that dlopens an instrumented library: the library brings the
 * runtime (DT_NEEDED libwpprt.so), whose initial-exec TLS must then come from static TLS. */
#include <dlfcn.h>
#include <stdio.h>
int main(void) {
    void *h = dlopen("./libfib.so", RTLD_NOW);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    long (*fib)(long) = (long (*)(long))dlsym(h, "fib");
    printf("%ld\n", fib(20));
    return 0;
}
