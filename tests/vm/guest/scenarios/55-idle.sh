# idle: what the running daemon costs while nothing changes (the same window is measured for
# irqbalance in 70-irqbalance.sh). Measurements, not checks, except that a quiet machine must
# see no write and no log line from irqwise (a pass that changes nothing logs nothing).
SCEN=idle
# The reconcile timer restarted with the window's length as its period: the window holds one
# reconcile pass (at its end), as an idle minute holds one with the default 60 s, beside
# irqbalance's scans every 10 s in the same window (70-irqbalance.sh).
write_config "[global]
reconcile_interval = \"${IDLE_S}s\""
kill -HUP "$DAEMON_PID"
sleep 1
PASSES0=$(status_field passes)
log_mark
note "window of $IDLE_S s starts; daemon pid $DAEMON_PID, $PASSES0 passes so far"
idle_cost "$DAEMON_PID" "$IDLE_S"; IDLE_RC=$?
check idle_alive "the daemon ran through the ${IDLE_S} s window" -- [ $IDLE_RC = 0 ]
PASSES1=$(status_field passes)
case "$PASSES0$PASSES1" in ""|*[!0-9]*) measure idle_passes n/a;; *) measure idle_passes $((PASSES1 - PASSES0));; esac
# What the window's pass (the reconcile) read and took, by the daemon's own count.
measure idle_pass_files "$(status_field counters.last_pass.files_opened)"
measure idle_pass_seconds "$(status_field counters.last_pass.duration_seconds)"
no_writes() {
  REPLY="passes $PASSES0 -> $PASSES1"
  [ -z "$IDLE_CHANGED" ] || { REPLY="$REPLY; changed: $IDLE_CHANGED"; return 1; }
  [ "$PASSES1" = "$PASSES0" ] && return 0
  # Passes ran (the reconcile timer): the last one must have written nothing.
  local w; w=$($IRQWISE status --json 2>/dev/null | awk -v get=summary.written -f /guest/planrows.awk)
  REPLY="$REPLY, last one wrote ${w:-?}"
  [ "$w" = 0 ]
}
check idle_no_writes "no IRQ mask changed in the window" -- no_writes
log_silent() { REPLY=$(log_since_mark | head -2 | tr '\n' '|'); [ -z "$REPLY" ]; }
check idle_log_silent "the daemon logged nothing in the window" -- log_silent
write_config ''
kill -HUP "$DAEMON_PID"
sleep 1
