#!/usr/bin/env python3
"""A high-entropy synthetic block trace in wpp's text format, on standard output: a random
program of F functions, each a loop nest whose trip counts and branch outcomes are drawn at
random at every execution (the events of real traces like zlib's and bzip2's inner loops,
unlike `wpp synth`'s biased, repetitive ones).

    bench/entropy-trace.py EVENTS SEED > t.txt && wpp trace convert t.txt -o t.trace
"""
import random
import sys


def main():
    events, seed = int(sys.argv[1]), int(sys.argv[2])
    rnd = random.Random(seed)
    nfuncs = 40
    # Per function: blocks of a loop body with a 2- or 4-way branch at each of a few points.
    funcs = []
    for f in range(nfuncs):
        points = rnd.randint(2, 5)
        funcs.append([rnd.choice((2, 2, 4)) for _ in range(points)])
    out = []
    n = 0
    write = sys.stdout.write
    names = [f"f{i}" for i in range(nfuncs)]

    def run(f, depth):
        nonlocal n
        out.append(f"F {names[f]}")
        out.append("B 0")
        n += 2
        for _ in range(rnd.randint(0, 12)):  # random trip count
            block = 1
            for ways in funcs[f]:
                out.append(f"B {block + rnd.randrange(ways)}")  # random outcome
                block += ways
                n += 1
            if depth < 3 and rnd.random() < 0.15:
                run(rnd.randrange(nfuncs), depth + 1)
        out.append("E")
        n += 1
        if len(out) > 100000:
            write("\n".join(out) + "\n")
            out.clear()

    while n < events:
        run(rnd.randrange(nfuncs), 0)
    write("\n".join(out) + "\n")


main()
