#!/usr/bin/env bash
# Fails when a built flowtrain library holds an AVX instruction (VEX/EVEX-encoded, or on a
# ymm/zmm/mask register) outside the code dispatched at run time: functions in a namespace
# named avx512, which run only where CpuHasAvx512(). Such an instruction would stop a
# program linking flowtrain with SIGILL on a CPU without it (an older or smaller x86-64).
#   tests/portable_test.sh LIBRARY...
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 LIBRARY..." >&2; exit 2; }
command -v objdump >/dev/null || { echo "portable_test: objdump (binutils) not found" >&2; exit 2; }

for lib in "$@"; do
  [ -f "$lib" ] || { echo "portable_test: $lib does not exist" >&2; exit 2; }
  objdump -d -C --no-show-raw-insn "$lib"
done | awk '
  # A function: "0000000000000000 <name>:"; an instruction: "   1f:\tmnemonic operands".
  /^[0-9a-f]+ <.*>:$/ { fn = substr($0, index($0, "<") + 1); fn = substr(fn, 1, length(fn) - 2);
                        functions++; next }
  /^ +[0-9a-f]+:\t/ {
    insn = substr($0, index($0, "\t") + 1)
    split(insn, parts, /[ \t]+/)
    if (parts[1] ~ /^v/ || insn ~ /%[yz]mm[0-9]|%k[0-7]/) {
      if (fn ~ /(^|::)avx512::/) { dispatched[fn] = 1; next }
      if (!(fn in bad)) { bad[fn] = insn; nbad++ }
    }
  }
  END {
    nd = 0; for (f in dispatched) nd++
    if (functions < 1000) { printf "portable_test: only %d functions disassembled: is objdump reading the libraries?\n", functions; exit 1 }
    # The dispatched kernels exist on x86-64: seeing none means this test no longer sees them.
    if (nd == 0) { print "portable_test: no AVX instruction in any avx512:: function: the dispatched kernels are missing, or this test cannot see them"; exit 1 }
    if (nbad > 0) {
      printf "portable_test: %d functions outside avx512:: use AVX instructions (a CPU without them would stop with SIGILL):\n", nbad
      shown = 0
      for (f in bad) { if (shown++ < 20) printf "  %s: %s\n", f, bad[f] }
      exit 1
    }
    printf "portable_test: %d functions, AVX instructions only in the %d dispatched avx512:: ones\n", functions, nd
  }'
