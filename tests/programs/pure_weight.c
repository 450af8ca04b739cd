/* The pure half of pure_main.c. */
long weight(const char *s) {
    long n = 0;
    while (*s)
        n += *s++;
    return n;
}
