#!/bin/sh
# run_fuzz.sh — fuzz one target for a while and report what it found.
#
#   tests/fuzz/run_fuzz.sh [-b BINDIR] [-w WORKDIR] [-k] TARGET SECONDS [libFuzzer options...]
#
#   TARGET    onnx, vir, npy or safetensors (the libFuzzer binary BINDIR/fuzz_TARGET)
#   SECONDS   how long to fuzz (-max_total_time)
#   -b BINDIR where the libFuzzer targets are (default: build/tests/fuzz/libfuzzer/tests/fuzz, the
#             instrumented build that a build configured with VCC_FUZZ=ON makes)
#   -w WORKDIR  corpus, artifacts and log (default: BINDIR/../../../run/TARGET); scratch files go to
#             /dev/shm when it is writable
#   -k        keep going after a finding (libFuzzer fork mode: -fork=1 -ignore_crashes=1
#             -ignore_timeouts=1 -ignore_ooms=1), to collect every distinct finding of a long run
#
# The fuzzer starts from WORKDIR/corpus (where it keeps what it finds interesting, across runs), the
# committed seeds (seeds/TARGET) and, with -k, the reproducers (corpus/TARGET), with the target's dictionary
# (dict/TARGET.dict) and a -max_len that suits it. Findings of this run are written to
# WORKDIR/artifacts/ (emptied first) as crash-*, leak-*, timeout-*, oom-* and slow-unit-* (libFuzzer's
# names). Prints the executions, the execution rate, the coverage, the corpus size and the findings;
# exit status 0 when there are none, 1 when there are, 2 on a usage error. Environment: VCC_FUZZ_TEXT_CHECK=0 stops the targets from
# treating raw control bytes in diagnostics as a finding.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
bindir=
work=
keep=0
while [ $# -gt 0 ]; do
    case "$1" in
        -b) bindir=$2; shift 2 ;;
        -w) work=$2; shift 2 ;;
        -k) keep=1; shift ;;
        *) break ;;
    esac
done
if [ $# -lt 2 ]; then
    sed -n '2,/^set /{/^#/p}' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
target=$1
secs=$2
shift 2
case "$target" in
    onnx) max_len=65536 ;;
    vir) max_len=16384 ;;
    npy) max_len=4096 ;;
    safetensors) max_len=4096 ;;
    *) echo "run_fuzz.sh: unknown target '$target' (onnx, vir, npy, safetensors)" >&2; exit 2 ;;
esac
[ -n "$bindir" ] || bindir=$here/../../build/tests/fuzz/libfuzzer/tests/fuzz
bin=$bindir/fuzz_$target
if [ ! -x "$bin" ]; then
    echo "run_fuzz.sh: $bin not found (configure with clang available and VCC_FUZZ=ON, then build)" >&2
    exit 2
fi
[ -n "$work" ] || work=$bindir/../../../run/$target
# findings are this run's: a finding of an earlier run is either fixed (its reproducer then belongs in
# corpus/TARGET) or still open (findings/), and must not fail every later run
rm -rf "$work/artifacts"
mkdir -p "$work/corpus" "$work/artifacts"
work=$(cd "$work" && pwd)
log=$work/fuzz.log
rm -f "$log"
# the targets' scratch files (each input is written to a file the readers open): memory when possible
scratch=$(mktemp -d /dev/shm/vcc-fuzz-run.XXXXXX 2>/dev/null || mktemp -d "$work/tmp.XXXXXX")
trap 'rm -rf "$scratch"' EXIT INT TERM

set -- -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
    -dict="$here/dict/$target.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@"
if [ "$keep" = 1 ]; then
    set -- -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 "$@"
fi
seeds=
[ -d "$here/seeds/$target" ] && seeds="$here/seeds/$target"
# the reproducers only where a crash does not end the run (they crash until their bugs are fixed)
repro=
[ "$keep" = 1 ] && [ -d "$here/corpus/$target" ] && repro="$here/corpus/$target"

echo "fuzzing $target for $secs s: $bin"
echo "log: $log"
status=0
# shellcheck disable=SC2086
TMPDIR=$scratch "$bin" "$@" "$work/corpus" $seeds $repro >"$log" 2>&1 || status=$?

# the last status line: "#N <event> cov: C ft: F corp: K/B ... exec/s: E ..." (fork mode: "#N: cov: ...")
last=$(grep -E '^#[0-9]+:?[[:space:]]' "$log" | tail -n 1 || true)
execs=$(printf '%s\n' "$last" | sed -n 's/^#\([0-9]*\).*/\1/p')
cov=$(printf '%s\n' "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
ft=$(printf '%s\n' "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
corp=$(printf '%s\n' "$last" | sed -n 's/.*corp: \([0-9]*\/*[0-9]*[A-Za-z]*\).*/\1/p')
rate=$(printf '%s\n' "$last" | sed -n 's/.*exec\/s:* \([0-9]*\).*/\1/p')
stat_execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
stat_rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
[ -n "$stat_execs" ] && execs=$stat_execs
[ -n "$stat_rate" ] && rate=$stat_rate
# fork mode: the status line's rate is the last job's; the run's average is executions / time
elapsed=$(printf '%s\n' "$last" | sed -n 's/.* time: \([0-9]*\)s.*/\1/p')
[ -n "$elapsed" ] && [ "$elapsed" -gt 0 ] && [ -n "$execs" ] && rate=$((execs / elapsed))
echo "executions: ${execs:-?}  exec/s: ${rate:-?}  coverage: ${cov:-?} edges, ${ft:-?} features  corpus: ${corp:-?}"
echo "corpus files in $work/corpus: $(ls "$work/corpus" | wc -l)"

# One line that tells a finding apart: where UBSan or ASan stopped, the failed check, the assertion,
# the first frame of a leak, or the timeout.
signature() {
    TMPDIR=$scratch "$bin" -timeout=10 -rss_limit_mb=2048 "$1" 2>&1 | awk '
        /runtime error:/ && !s { s = $0 }
        /fuzz check failed/ && !s {
            s = substr($0, 1, 160)  # the same check on other bytes is the same finding
            gsub(/U\+[0-9A-F]+/, "U+XXXX", s); gsub(/0x[0-9a-f]+/, "0xXX", s); gsub(/byte [0-9]+/, "byte N", s)
        }
        /internal error/ && !s { s = $0 }
        /ERROR: AddressSanitizer/ && !a { a = $0; want = 1; next }
        want && / #[0-9]+ / && !/ in (malloc|calloc|realloc|free|strdup|__interceptor|operator)/ && !/compiler-rt|libc\.so/ { f = $0; want = 0 }
        /Direct leak/ && !l { l = 1; wantl = 1; next }
        wantl && / #[0-9]+ / && !/ in (malloc|calloc|realloc|strdup|__interceptor)/ && !/compiler-rt/ { lf = $0; wantl = 0 }
        /SUMMARY: libFuzzer: timeout/ && !t { t = "timeout (a hang, or slower than 10 s)" }
        /out-of-memory/ && !o { o = "out of memory (rss limit)" }
        END {
            if (s) print s
            else if (a) { sub(/^.*ERROR: /, "", a); sub(/ on address.*/, "", a); sub(/^ *#[0-9]+ 0x[0-9a-f]+ /, "", f); print a " " f }
            else if (l) { sub(/^ *#[0-9]+ 0x[0-9a-f]+ /, "", lf); print "leak: " lf }
            else if (t) print t
            else if (o) print o
            else print "(no report on replay: flaky, or needs the fuzzing process state)"
        }' | sed -E 's#/[^ :]*/(ir|passes|frontend|codegen|runtime|tests)/#\1/#g'

}

findings=$(ls "$work/artifacts" 2>/dev/null | grep -E '^(crash|leak|timeout|oom|slow-unit)-' || true)
if [ -n "$findings" ]; then
    echo "findings in $work/artifacts (replayed one by one; same signature = same finding):"
    for f in $findings; do
        printf '%s\t%s (%s bytes)\n' "$(signature "$work/artifacts/$f")" "$f" "$(wc -c <"$work/artifacts/$f")"
    done | sort | awk -F '\t' '$1 != prev { n++; print "  [" n "] " $1; prev = $1 } { print "        " $2 }'
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "the fuzzer exited with status $status and left no artifact; see $log"
    tail -n 20 "$log"
    exit 1
fi
echo "no findings"
