# sighup: a config moving vmxnet3 to node 0 is picked up on SIGHUP; an invalid one is rejected.
SCEN=sighup
log_mark
# The dotted-key form, checked on its own so a parser defect does not hide the reload.
mkdir -p /tmp/dotted/etc/irqwise
printf '[[device]]\nmatch.driver = "vmxnet3"\nnode = 0\n' > /tmp/dotted/etc/irqwise/irqwise.toml
dotted_ok() { REPLY=$($IRQWISE --config /tmp/dotted check-config 2>&1 | head -1); $IRQWISE --config /tmp/dotted check-config >/dev/null 2>&1; }
check dotted_match 'check-config accepts `match.driver = "vmxnet3"` (a TOML dotted key)' -- dotted_ok
write_config '[[device]]
match = { driver = "vmxnet3" }
node = 0'
queue0_on_node0() { local e=${MASKS%% *}; local n; eval "n=\$NODE_${e#*=}"; [ "$n" = 0 ]; }
now; T0=$NOW
kill -HUP "$DAEMON_PID"
settle "$NIC_IRQS" 'all_single && queue0_on_node0' 30000
measure node0_react_ms "$SETTLE_MS"
check node0_plan "irqwise plan --json with the new config" -- plan_ok
check node0_planned "eth0 queues on the re-planned CPUs" -- matches_plan "$NIC_IRQS"
read_masks "$NIC_IRQS"; mask_lists
check node0_spread "node 0, distinct cores first (from sysfs)" -- check_spread 0 "$REPLY"
read_masks "$NIC_IRQS"; GOOD=$MASKS
log_mark
write_config '[[device]]
match.driver = "vmxnet3"
node = "zero"'
kill -HUP "$DAEMON_PID"
sleep 3
read_masks "$NIC_IRQS"
check invalid_unchanged "invalid config: placement unchanged" -- [ "$MASKS" = "$GOOD" ]
logged_config_error() {
  REPLY=$(log_since_mark | grep -iE 'error' | head -1)
  echo "$REPLY" | grep -q 'irqwise.toml'
}
check invalid_logged "the error is logged, naming the file" -- logged_config_error
check daemon_alive "daemon survives the invalid config" -- daemon_alive
write_config ''
now; T0=$NOW
kill -HUP "$DAEMON_PID"
settle "$NIC_IRQS" '[ "$MASKS" = "$STARTUP_MASKS" ]' 30000
measure restore_react_ms "$SETTLE_MS"
check restored "default config again: back on node $NIC_NODE as at startup" -- [ "$SETTLE_MS" -ge 0 ]
