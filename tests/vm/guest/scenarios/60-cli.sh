# cli-agree: the one-shot commands agree with the running daemon.
SCEN=cli-agree
APPLY_OUT=$($IRQWISE --config $CFG apply 2>&1); APPLY_RC=$?
LAST=$(echo "$APPLY_OUT" | tail -1)
check apply_noop "irqwise apply exits 0 and writes nothing ($LAST)" -- [ $APPLY_RC = 0 -a "${LAST%% *}" = 0 ]
plan_rows
no_set() { REPLY=$(awk '$2 == "set" { printf "irq %s ", $1 }' /tmp/plan.rows); [ -z "$REPLY" ]; }
check plan_no_set "irqwise plan --json: every IRQ keep/managed/skip" -- no_set
check plan_matches "plan desired = /proc/irq for NIC and NVMe" -- matches_plan "$NIC_IRQS $NVME_IO"
check daemon_stops "SIGTERM stops the daemon within 5 s" -- stop_daemon
