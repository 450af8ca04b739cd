/* Lua 5.4 host for the wpp real-workload benchmark (the lua-src crate ships no lua.c).
 *
 *   lua-driver SCRIPT.lua [ARG...]
 *
 * Creates a state, opens the standard libraries, sets the global `arg` table (arg[0] = SCRIPT,
 * arg[1..] = ARGs, as lua.c does), runs SCRIPT with the ARGs also passed as `...`, and prints
 * every value the chunk returns, one per line, with luaL_tolstring. Errors (with a traceback)
 * go to stderr and the exit status is 1.
 *
 * Deterministic control flow: Lua hashes some table keys by ADDRESS (tables, functions and light
 * userdata as keys; the parser keys its constant table's nil entry by a table), so with ASLR, or
 * between two differently linked builds (native vs. instrumented), the same script would take
 * different paths through ltable.c. The state therefore allocates from an arena mapped at a
 * fixed address with a simple deterministic size-class allocator: the same allocation sequence
 * gives the same addresses in every run and every build. Compile with -DLUA_DRIVER_LIBC_ALLOC
 * to use realloc/free instead (or when the fixed mapping fails, a warning on stderr). */
#define _GNU_SOURCE 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lauxlib.h"
#include "lua.h"
#include "lualib.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#define ARENA_BASE ((uintptr_t)0x300000000000ull) /* below PIE/heap (0x55..), far from mmaps */
#define ARENA_SIZE ((size_t)16 << 30)             /* reserved (MAP_NORESERVE), not committed */
#define SMALL_MAX 1024                            /* 16-byte classes up to here, then 2^k */
#define NCLASSES (SMALL_MAX / 16 + 64)

static char *arena_top, *arena_end;
static void *free_lists[NCLASSES];

static int arena_init(void) {
#ifdef LUA_DRIVER_LIBC_ALLOC
    return 0;
#else
    void *p = mmap((void *)ARENA_BASE, ARENA_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) return 0;
    if ((uintptr_t)p != ARENA_BASE) { /* old kernel: flag ignored, mapped elsewhere */
        munmap(p, ARENA_SIZE);
        return 0;
    }
    arena_top = p;
    arena_end = arena_top + ARENA_SIZE;
    return 1;
#endif
}

static unsigned size_class(size_t n, size_t *csize) {
    if (n <= SMALL_MAX) {
        size_t c = (n + 15) >> 4;
        if (c == 0) c = 1;
        *csize = c << 4;
        return (unsigned)(c - 1);
    }
    unsigned k = 11;
    while (((size_t)1 << k) < n) k++;
    *csize = (size_t)1 << k;
    return SMALL_MAX / 16 + (k - 11);
}

static void *arena_alloc(size_t n) {
    size_t csize;
    unsigned c = size_class(n, &csize);
    void *p = free_lists[c];
    if (p) {
        free_lists[c] = *(void **)p;
        return p;
    }
    if ((size_t)(arena_end - arena_top) < csize) return NULL;
    p = arena_top;
    arena_top += csize;
    return p;
}

static void arena_free(void *p, size_t n) {
    size_t csize;
    unsigned c = size_class(n, &csize);
    *(void **)p = free_lists[c];
    free_lists[c] = p;
}

/* lua_Alloc over the arena: Lua always tells us the old size, so no block headers. */
static void *arena_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    (void)ud;
    if (nsize == 0) {
        if (ptr) arena_free(ptr, osize);
        return NULL;
    }
    if (ptr == NULL) return arena_alloc(nsize);
    size_t oc, nc;
    if (size_class(osize, &oc) == size_class(nsize, &nc)) return ptr;
    void *q = arena_alloc(nsize);
    if (q == NULL) return nsize < osize ? ptr : NULL; /* shrinking must not fail */
    memcpy(q, ptr, osize < nsize ? osize : nsize);
    arena_free(ptr, osize);
    return q;
}

static void *libc_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, nsize);
}

static int panic(lua_State *L) {
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "lua-driver: PANIC: %s\n", msg ? msg : "error object is not a string");
    return 0;
}

static int traceback(lua_State *L) {
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) msg = luaL_tolstring(L, 1, NULL);
    luaL_traceback(L, L, msg, 1);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SCRIPT.lua [ARG...]\n", argv[0]);
        return 2;
    }
    int arena = arena_init();
#ifndef LUA_DRIVER_LIBC_ALLOC
    if (!arena)
        fprintf(stderr, "lua-driver: warning: no arena at %#lx, using realloc (addresses, and so "
                        "paths through ltable.c, vary between runs)\n", (unsigned long)ARENA_BASE);
#endif
    lua_State *L = lua_newstate(arena ? arena_lua_alloc : libc_lua_alloc, NULL);
    if (L == NULL) {
        fprintf(stderr, "lua-driver: cannot create state\n");
        return 1;
    }
    lua_atpanic(L, panic);
    luaL_openlibs(L);

    lua_createtable(L, argc - 2, 1);
    for (int i = 1; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i - 1);
    }
    lua_setglobal(L, "arg");

    lua_pushcfunction(L, traceback);
    int base = lua_gettop(L);
    int status = luaL_loadfile(L, argv[1]);
    if (status == LUA_OK) {
        for (int i = 2; i < argc; i++) lua_pushstring(L, argv[i]);
        status = lua_pcall(L, argc - 2, LUA_MULTRET, base);
    }
    if (status != LUA_OK) {
        fprintf(stderr, "lua-driver: %s\n", lua_tostring(L, -1));
        lua_close(L);
        return 1;
    }
    int nres = lua_gettop(L) - base;
    for (int i = 1; i <= nres; i++) {
        size_t len;
        const char *s = luaL_tolstring(L, base + i, &len);
        fwrite(s, 1, len, stdout);
        fputc('\n', stdout);
        lua_pop(L, 1);
    }
    lua_close(L);
    return fflush(stdout) == 0 ? 0 : 1;
}
