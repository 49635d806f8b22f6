#!/usr/bin/env python3
"""Write a C program with N functions (default 120000), for the large-binary benchmark.

Every function is real code with its own symbol; main() spends its time in a handful of them
(hot_0 .. hot_3, in a 4:3:2:1 split) and touches the rest once, so a profiler must load all
the symbols to name the few hot ones."""
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 120000
out = sys.stdout
out.write("#include <stdio.h>\n#include <stdlib.h>\n")
out.write("volatile unsigned long sink;\n")
for i in range(n):
    out.write(f"__attribute__((noinline)) unsigned long f{i}(unsigned long x) {{ return x * {i + 3}u + {i}u; }}\n")
for h in range(4):
    out.write(
        f"__attribute__((noinline)) void hot_{h}(long n) {{ unsigned long s = 0; "
        f"for (long i = 0; i < n; i++) s += (s >> 3) ^ (unsigned long)i * {h + 7}u; sink = s; }}\n"
    )
out.write("typedef unsigned long (*fn)(unsigned long);\nstatic const fn all[] = {\n")
for i in range(n):
    out.write(f"f{i},\n")
out.write("};\n")
out.write(
    "int main(int argc, char **argv) {\n"
    "  long scale = argc > 1 ? atol(argv[1]) : 100000000;\n"
    "  unsigned long s = 0;\n"
    "  for (unsigned long i = 0; i < sizeof all / sizeof all[0]; i++) s += all[i](i);\n"
    "  sink = s;\n"
    "  hot_0(4 * scale); hot_1(3 * scale); hot_2(2 * scale); hot_3(scale);\n"
    "  return 0;\n}\n"
)
