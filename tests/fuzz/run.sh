#!/bin/sh
# run.sh BUILD_DIR FUZZ_DIR SECONDS [TARGET...]
# Replays every kept crash input (FUZZ_DIR/regressions/TARGET/*), then fuzzes
# each target for SECONDS from its seed corpus (FUZZ_DIR/corpus/NAME). New
# corpus entries go to a scratch directory, never into the source tree. A
# crash leaves its input in BUILD_DIR/crash-TARGET-*; copy it into
# regressions/ once fixed.
set -u
bin=$1; dir=$2; secs=$3; shift 3
targets=${*:-"fuzz_proto fuzz_config fuzz_snapshot fuzz_journal fuzz_url fuzz_resp fuzz_dump fuzz_users fuzz_cluster_map fuzz_cluster_move fuzz_slot_image"}
status=0
for t in $targets; do
	name=${t#fuzz_}
	work=$(mktemp -d)
	if [ -d "$dir/regressions/$name" ] && [ -n "$(ls -A "$dir/regressions/$name")" ]; then
		"$bin/$t" -runs=0 "$dir/regressions/$name"/* >"$work/regress.log" 2>&1 ||
			{ echo "$t: a regression input fails again"; tail -30 "$work/regress.log"; status=1; }
	fi
	"$bin/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	    -artifact_prefix="$bin/crash-$t-" -print_final_stats=1 \
	    "$work" "$dir/corpus/$name" >"$work/fuzz.log" 2>&1
	st=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log")
	if [ $st = 0 ]; then
		echo "$t: ok, ${runs:-?} runs in ${secs} s"
	else
		echo "$t: FAILED (exit $st)"; tail -40 "$work/fuzz.log"; status=1
	fi
	rm -rf "$work"
done
exit $status
