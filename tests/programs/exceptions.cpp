// C++ exceptions thrown through frames with and without cleanups, caught, rethrown and nested.
// The trace must stay balanced: frames unwound by an exception get exact Leave events.
#include <cstdio>
#include <stdexcept>
#include <string>

static long n_thrower, n_plain, n_guarded, n_rethrower;

struct Guard {
    int id;
    explicit Guard(int i) : id(i) {}
    ~Guard() { std::printf("~Guard %d\n", id); }
};

__attribute__((noinline)) static int thrower(int depth) {
    n_thrower++;
    if (depth == 0) throw std::runtime_error("bottom");
    return thrower(depth - 1) + 1;
}

__attribute__((noinline)) static int plain(int depth) {  // no cleanups: no landing pad
    n_plain++;
    return thrower(depth) * 2;
}

__attribute__((noinline)) static int guarded(int depth) {  // cleanup landing pad + resume
    n_guarded++;
    Guard g(depth);
    return plain(depth) + 1;
}

__attribute__((noinline)) static int rethrower(int depth) {
    n_rethrower++;
    try {
        return guarded(depth);
    } catch (const std::exception &e) {
        std::printf("rethrowing %s at %d\n", e.what(), depth);
        throw;
    }
}

int main() {
    int caught = 0;
    for (int i = 0; i < 5; i++) {
        try {
            if (i % 2) rethrower(i);
            else guarded(i);
        } catch (const std::runtime_error &e) {
            caught++;
            std::printf("caught %s in round %d\n", e.what(), i);
        }
    }
    try {
        try {
            plain(3);
        } catch (const std::logic_error &) {
            std::printf("wrong handler\n");
        }
    } catch (const std::exception &e) {
        std::printf("outer caught %s\n", e.what());
    }
    std::printf("caught=%d\ncalls thrower=%ld\ncalls plain=%ld\n", caught, n_thrower, n_plain);
    std::printf("calls guarded=%ld\ncalls rethrower=%ld\ncalls main=1\n", n_guarded, n_rethrower);
    return 0;
}
