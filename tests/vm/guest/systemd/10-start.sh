# start: `systemctl start irqwise` under the hardened unit. Type=notify: the command returns
# once the daemon sent READY=1, which it sends after its first pass, so the NIC's queues must be
# placed the moment it returns (read at once, no polling).
SCEN=start
systemctl stop irqwise.service irqbalance.service
scramble
read_masks "$NVME_IO"; NVME_BEFORE=$MASKS
jmark
now; T0=$NOW
systemctl start irqwise.service; START_RC=$?
read_masks "$NIC_IRQS"; AT_RETURN=$MASKS
now; measure start_ms $((NOW - T0))
started() { REPLY="systemctl start: exit $START_RC; $(prop ActiveState)/$(prop SubState), Type=$(prop Type)"; [ $START_RC = 0 ] && [ "$(prop ActiveState)/$(prop SubState)" = active/running ] && [ "$(prop Type)" = notify ]; }
check started "active (running) under Type=notify" -- started
placed_at_return() {
  [ "$AT_RETURN" != "" ] || return 1
  placed_as_planned || return 1
  read_masks "$NIC_IRQS"; [ "$MASKS" = "$AT_RETURN" ] || { REPLY="masks changed after start returned: $AT_RETURN -> $MASKS"; return 1; }
}
check placed_at_return "the NIC's queues placed when systemctl start returns" -- placed_at_return
read_masks "$NIC_IRQS"; mask_lists; STARTUP_LISTS=$REPLY; STARTUP_MASKS=$MASKS
placement_metrics "$NIC_IRQS" "$NIC_NODE"
check nvme_managed "NVMe I/O IRQs (kernel-managed) as predicted and untouched" -- matches_plan "$NVME_IO"

# StatusText= is the daemon's STATUS= line, the same as the state file's.
status_text() {
  local text want
  text=$(prop StatusText); REPLY="StatusText=$text"
  want=$($IRQWISE status --json | awk -f /guest/planrows.awk -v get=status)
  case $text in *" IRQs on "*" devices: "*) ;; *) return 1;; esac
  [ "$text" = "$want" ] || { REPLY="$REPLY; state file: $want"; return 1; }
}
check status_text "StatusText carries the pass summary" -- status_text
status_pid() { REPLY="state pid $($IRQWISE status --json | awk -f /guest/planrows.awk -v get=pid), MainPID $(main_pid)"; [ "$($IRQWISE status --json | awk -f /guest/planrows.awk -v get=pid)" = "$(main_pid)" ]; }
check status_pid "irqwise status reads the running daemon's state (/run/irqwise)" -- status_pid

# `journalctl -u irqwise IRQ=<n>`, as a user types it, finds the change the start made to IRQ n:
# every entry it lists is IRQ n's, the last one is this daemon's and names the mask IRQ n has.
Q0=${NIC_IRQS%% *}
journal_irq() {
  local want last n
  want=$(cat /proc/irq/$Q0/smp_affinity_list)
  journalctl --sync 2>/dev/null
  journalctl --no-pager -u $UNIT IRQ=$Q0 -o json > /tmp/irq.json
  n=$(grep -c . /tmp/irq.json); last=$(tail -1 /tmp/irq.json)
  REPLY="$n entr(y/ies) for IRQ $Q0, the last: $(echo "$last" | grep -o '"MESSAGE":"[^"]*"')"
  [ "$n" -ge 1 ] || return 1
  [ "$(grep -c "\"IRQ\":\"$Q0\"" /tmp/irq.json)" = "$n" ] || { REPLY="$REPLY; an entry of another IRQ"; return 1; }
  echo "$last" | grep -q "\"CPUS_NEW\":\"$want\"" || { REPLY="$REPLY; CPUS_NEW is not $want"; return 1; }
  echo "$last" | grep -q "\"_PID\":\"$(main_pid)\"" || { REPLY="$REPLY; not from MainPID $(main_pid)"; return 1; }
}
check journal_irq_field "journalctl -u irqwise IRQ=$Q0 finds its change (CPUS_NEW = its mask now)" -- journal_irq
# What the sandbox would deny shows up as an error or a degraded start; none of it may appear.
check sandbox_quiet "no denied call, read-only path or missing event source in the journal" -- daemon_quiet
