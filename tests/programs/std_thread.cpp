// A C++ program whose only thread start is libstdc++'s out-of-line std::thread constructor
// helper: the linked module never declares pthread_create.
#include <cstdio>
#include <thread>

static long counted;

int main() {
    std::thread t([] {
        for (int i = 0; i < 1000; i++) counted += i & 1;
    });
    t.join();
    std::printf("counted=%ld\n", counted);
    return 0;
}
