#!/bin/sh
# check_contract.sh OFF FAST DIR - runtime_fp_contract (tests/runtime/test_contract.c): the promised draws
# of the build without fused multiply-adds (OFF) and the one with them (FAST) are the same bits, and the
# naive formula's differ (else FAST fused nothing: exit 77, skipped).
set -u
off=$1 fast=$2 dir=$3
mkdir -p "$dir" || exit 1
"$off" witness >"$dir/witness_off.txt" && "$fast" witness >"$dir/witness_fast.txt" || exit 1
n=$(paste -d' ' "$dir/witness_off.txt" "$dir/witness_fast.txt" | awk '$1 != $2' | wc -l)
if [ "$n" -eq 0 ]; then
    echo "SKIP: the fused build computes the naive formula low + (high - low) * u like the other (no FMA here)"
    exit 77
fi
echo "naive float formula: $n of $(wc -l <"$dir/witness_off.txt") draws differ between the builds (the fused build fuses)"
"$off" >"$dir/draws_off.txt" && "$fast" >"$dir/draws_fast.txt" || exit 1
m=$(diff "$dir/draws_off.txt" "$dir/draws_fast.txt" | grep -c '^<')
echo "vcc_random_value and Dropout: $m of $(wc -l <"$dir/draws_off.txt") values differ"
if [ "$m" -ne 0 ]; then
    echo "FAIL: the draws depend on multiply-add fusion; the CUDA trainer (nvcc fuses) would part from the C one"
    exit 1
fi
echo "PASS"
