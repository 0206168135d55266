# storm: STORM_CYCLES (default 200) offline/online cycles of the CPU of eth0's queue 0, as fast
# as the guest allows. The daemon coalesces the burst: afterwards the placement is the one from
# before, with no error or warning, and the passes and writes it took are measured
# (70-irqbalance.sh runs the same storm under irqbalance).
SCEN=storm
read_masks "$NIC_IRQS"; BEFORE=$MASKS; mask_lists; measure initial_masks "$REPLY"
read_masks "$NVME_IO"; NVME_STORM0=$MASKS
OFF=${BEFORE%% *}; OFF=${OFF#*=}
PASSES0=$(status_field passes); WRITES0=$(status_field counters.writes.written)
log_mark
note "CPU $OFF (queue 0's): $STORM_CYCLES offline/online cycles; pass $PASSES0, NIC $BEFORE"
cpu_storm "$OFF" "$STORM_CYCLES"; STORM_RC=$?
measure cycles "$STORM_CYCLES"; measure cpu "$OFF"
measure storm_ms "$STORM_MS"
check cpu_back "CPU $OFF online after the storm ($STORM_FAILS writes to its online file failed)" -- [ $STORM_RC = 0 ]
now; T0=$NOW
settle "$NIC_IRQS" '[ "$MASKS" = "$BEFORE" ]' 30000
measure settle_ms "$SETTLE_MS"
read_masks "$NIC_IRQS"; mask_lists; measure final_masks "$REPLY"
check restored "after the storm, eth0's masks are the ones from before: $MASKS" -- [ "$SETTLE_MS" -ge 0 ]
if [ "$SETTLE_MS" -ge 0 ]; then measure final_equal yes; else measure final_equal no; fi
read_masks "$NVME_IO"
check nvme_restored "kernel-managed NVMe masks as before the storm" -- [ "$MASKS" = "$NVME_STORM0" ]
sleep 1   # the state file of the last pass
PASSES1=$(status_field passes); WRITES1=$(status_field counters.writes.written)
counted() { case "$1$2" in ""|*[!0-9]*) echo n/a;; *) echo $(($2 - $1));; esac; }
measure passes "$(counted "$PASSES0" "$PASSES1")"
measure writes "$(counted "$WRITES0" "$WRITES1")"
log_writes; measure logged_writes "$REPLY"
check alive "the daemon runs after the storm" -- daemon_alive
check no_errors "daemon log has no ERROR/WARN lines" -- no_log_problems
proc_sample "$DAEMON_PID" && measure rss_kb "$S_RSS"
