// libstdc++'s templates in a dependence mode (crates/wpp-instrument/tests/deps.rs): the bytes
// a std::string appends and the length it grows to are written by std::string's own code,
// which wpp cc instantiates in the program (wpp_instrument::driver::libstdcxx), so the plain
// loads of at() and length() depend on stores in std::string's functions, never on poke's
// stale bytes or on the length the constructor stored. Built with -O0 -g: nothing inlined.
#include <cstdio>
#include <string>

#define NOINLINE __attribute__((noinline))

NOINLINE void poke(char *p, int n) {
    for (int i = 0; i < n; i++)
        p[i] = (char)('a' + i);
}

NOINLINE int at(const char *p, int i) {
    return p[i];
}

// libstdc++'s string: the character pointer, then the length.
NOINLINE long length(const std::string *s) {
    return *reinterpret_cast<const long *>(reinterpret_cast<const char *>(s) + sizeof(char *));
}

NOINLINE int grown(const char *tail) {
    char *reused = new char[64];
    poke(reused, 64);
    delete[] reused;
    std::string s("0123456789abcdef");
    s += tail;
    return (int)length(&s) * 256 + at(s.data(), 20);
}

int main() {
    std::printf("%d\n", grown("ghijklmnopqrstuvwxyz"));
    return 0;
}
