/* Lua 5.4 host for the wpp real-workload benchmark (the lua-src crate ships no lua.c).
 *
 *   lua-driver SCRIPT.lua [ARG...]
 *
 * Creates a state, opens the standard libraries, sets the global `arg` table (arg[0] = SCRIPT,
 * arg[1..] = ARGs, as lua.c does), runs SCRIPT with the ARGs also passed as `...`, and prints
 * every value the chunk returns, one per line, with luaL_tolstring. Errors (with a traceback)
 * go to stderr and the exit status is 1. */
#include <stdio.h>
#include <stdlib.h>

#include "lauxlib.h"
#include "lua.h"
#include "lualib.h"

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
    lua_State *L = luaL_newstate();
    if (L == NULL) {
        fprintf(stderr, "lua-driver: cannot create state\n");
        return 1;
    }
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
