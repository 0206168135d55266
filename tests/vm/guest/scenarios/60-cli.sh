# cli-agree: the one-shot commands agree with the running daemon.
SCEN=cli-agree
APPLY_OUT=$($IRQWISE --config $CFG apply 2>&1); APPLY_RC=$?
LAST=$(echo "$APPLY_OUT" | tail -1)
check apply_noop "irqwise apply exits 0 and writes nothing ($LAST)" -- [ $APPLY_RC = 0 -a "${LAST%% *}" = 0 ]
plan_rows
no_set() { REPLY=$(awk '$2 == "set" { printf "irq %s ", $1 }' /tmp/plan.rows); [ -z "$REPLY" ]; }
check plan_no_set "irqwise plan --json: every IRQ keep/managed/skip" -- no_set
check plan_matches "plan desired = /proc/irq for NIC and NVMe" -- matches_plan "$NIC_IRQS $NVME_IO"
# irqwise status --json: the running daemon's last pass, its plan equal to /proc/irq.
status_json() {
  local pid passes
  $IRQWISE status --json > /tmp/status.json 2>/tmp/status.err || { REPLY=$(head -c 200 /tmp/status.err); return 1; }
  pid=$(awk -v get=pid -f /guest/planrows.awk /tmp/status.json)
  passes=$(awk -v get=passes -f /guest/planrows.awk /tmp/status.json)
  [ "$pid" = "$DAEMON_PID" ] || { REPLY="pid $pid, the daemon is $DAEMON_PID"; return 1; }
  case $passes in ""|*[!0-9]*) REPLY="passes is '$passes', not a number"; return 1;; esac
  [ "$passes" -ge 1 ] || { REPLY="passes $passes"; return 1; }
  awk -v base=plan. -f /guest/planrows.awk /tmp/status.json > /tmp/status.rows
  ROWS=/tmp/status.rows
  status_on_irq "$NIC_IRQS" || { ROWS=; return 1; }
  ROWS=; REPLY="pass $passes, $REPLY"
}
# status_on_irq IRQS: each IRQ's desired set in $ROWS equals its /proc/irq mask.
status_on_irq() {
  local e i have
  read_masks "$1"
  for e in $MASKS; do
    i=${e%%=*}; expand "${e#*=}"; have=$REPLY
    plan_field "$i" 4 || { REPLY="irq $i not in the status plan"; return 1; }
    local said=$REPLY; expand "$said"
    [ "$REPLY" = "$have" ] || { REPLY="irq $i: status says $said, /proc/irq $have"; return 1; }
  done
  REPLY="$(count "$1") NIC IRQs as in /proc/irq"
}
check status_json "irqwise status --json: the daemon's pid, a numeric pass count, NIC plan = /proc/irq" -- status_json
check daemon_stops "SIGTERM stops the daemon within 5 s" -- stop_daemon
