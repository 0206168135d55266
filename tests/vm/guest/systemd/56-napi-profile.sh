# napi-profile: issue 54's [napi] profile under the hardened unit. A drop-in with [napi] (and
# restore_on_exit) and `systemctl reload`: every NAPI instance of the NIC must then carry the
# profile, read back with the kernel's napi-get (/usr/local/bin/napi, guest/tools/napi.c). The
# writes are napi-set messages of the netdev generic-netlink family, which the kernel allows only
# with CAP_NET_ADMIN (GENL_ADMIN_PERM) over an AF_NETLINK socket: the unit's
# CapabilityBoundingSet= and RestrictAddressFamilies= must allow them, and no call may be denied.
# The journal must name the applied profile and the interface; `systemctl stop` must put back
# every instance's values from before (the first instance is given its own with `napi set`
# beforehand); then the drop-in goes and the unit starts again, as 60-restore.sh leaves it. On a
# kernel without napi-set (before 6.13; this tier boots Debian 12's 6.1, which has no netdev
# family at all) the daemon must log exactly one line with `needs 6.13`, the reload succeed and
# the placement stay as planned; the value rows say so and pass.
SCEN=napi-profile
NPS_DEFER=3 NPS_GRO=50000 NPS_SUSPEND=2000000   # defer_hard_irqs = 3, "50us", "2ms"
NPS_KERNEL=$(uname -r)
NAPI=/usr/local/bin/napi
# nps_holds: every NAPI instance of $NIC carries the profile (REPLY: the first that does not).
nps_holds() {
  local out bad
  out=$($NAPI list "$NIC" 2>&1) || { REPLY="napi list $NIC: $out"; return 1; }
  [ -n "$out" ] || { REPLY="$NIC has no NAPI instance"; return 1; }
  bad=$(echo "$out" | awk -v d=$NPS_DEFER -v g=$NPS_GRO -v s=$NPS_SUSPEND '
    $10 != d || $12 != g || ($14 != -1 && $14 != s) { printf "instance %s: defer %s gro %s suspend %s", $2, $10, $12, $14; exit }')
  [ -z "$bad" ] || { REPLY="$bad, want $NPS_DEFER $NPS_GRO $NPS_SUSPEND"; return 1; }
  REPLY="$(echo "$out" | wc -l) instances of $NIC: defer $NPS_DEFER gro $NPS_GRO suspend $NPS_SUSPEND"
}
# nps_denied: REPLY = the unit's journal lines since the mark about NAPI or netlink that say the
# kernel refused (which sandbox setting: EPERM from napi-set is CapabilityBoundingSet=
# (CAP_NET_ADMIN), EAFNOSUPPORT is RestrictAddressFamilies=, a denied syscall SystemCallFilter=).
nps_denied() {
  REPLY=$(jsince -u $UNIT | grep -iE 'napi|netdev|netlink' | grep -iE 'not permitted|permission|denied|EPERM|EACCES|address family|EAFNOSUPPORT' | head -2 | sed 's/^\[[^]]*\] [^ ]* //' | tr '\n' '|')
}
nps_needs_lines() { jsince -u $UNIT | grep -c 'needs 6\.13'; }

# napi-set is there when napi-get tells defer-hard-irqs (6.13 and later; 6.1: no netdev family).
NPS_SET=0
$NAPI list "$NIC" > /tmp/nps.boot 2>&1 && awk '$9 == "defer" && $10 != -1 { ok = 1 } END { exit !ok }' /tmp/nps.boot && NPS_SET=1
measure napi_set "$([ $NPS_SET = 1 ] && echo yes || echo "no: $(head -c 100 /tmp/nps.boot)")"
if [ $NPS_SET = 1 ]; then
  NPS_FIRST=$(awk '{ print $2; exit }' /tmp/nps.boot)
  $NAPI set "$NPS_FIRST" defer 1 gro 20000 2>/dev/null
  $NAPI list "$NIC" > /tmp/nps.orig 2>&1
fi

printf '[global]\nrestore_on_exit = true\n\n[napi]\ndefer_hard_irqs = %s\ngro_flush_timeout = "50us"\nirq_suspend_timeout = "2ms"\n' "$NPS_DEFER" > $DROPINS/56-napi.toml
jmark
now; T0=$NOW
RELOAD_OUT=$(systemctl reload $UNIT 2>&1); RELOAD_RC=$?
if [ $NPS_SET = 1 ]; then
  applied() {
    REPLY="systemctl reload: exit $RELOAD_RC ${RELOAD_OUT:0:120}"; [ $RELOAD_RC = 0 ] || return 1
    wait_until 10000 nps_holds && { REPLY="$REPLY ($WAITED_MS ms after the reload)"; return 0; }
    local why=$REPLY; nps_denied; REPLY="$why${REPLY:+; refused: $REPLY}"; return 1
  }
  check applied "reload with [napi]: every NAPI instance of $NIC carries the profile, written from the sandbox" -- applied
  measure applied_ms "$WAITED_MS"
  check journal "the unit's journal names the applied profile and $NIC" -- unit_log_has "napi profile.*$NIC|$NIC.*napi profile"
else
  result applied PASS "not on $NPS_KERNEL (napi-set came with 6.13): reload exit $RELOAD_RC"
  result journal PASS "not on $NPS_KERNEL"
fi
check allowed "no call denied in the daemon's life (journal)" -- daemon_quiet
needs_line() {
  local n; n=$(nps_needs_lines)
  if [ $NPS_SET = 1 ]; then REPLY="$n line(s) with 'needs 6.13' on $NPS_KERNEL"; [ "$n" = 0 ]; return; fi
  REPLY="$n line(s) with 'needs 6.13': $(jsince -u $UNIT | grep -m1 'needs 6\.13' | sed 's/^\[[^]]*\] [^ ]* //' | cut -c1-160)"
  [ "$n" = 1 ] && [ $RELOAD_RC = 0 ] || return 1
  local why=$REPLY; placed_as_planned || return 1; REPLY="$why; $REPLY"
}
sleep 2   # a later pass must not say it again
check needs_6_13 "without napi-set exactly one journal line says 'needs 6.13' (reload exit 0, placement as planned); with it none" -- needs_line

# restored: systemctl stop with restore_on_exit; then as 60-restore.sh leaves it: the drop-in gone,
# the unit started again.
systemctl stop $UNIT; STOP_RC=$?
if [ $NPS_SET = 1 ]; then
  nps_restored() {
    $NAPI list "$NIC" > /tmp/nps.now 2>&1 || { REPLY="napi list: $(cat /tmp/nps.now)"; return 1; }
    REPLY=$(awk 'NR == FNR { v[$2] = $10 " " $12 " " $14; last = v[$2]; next }
      { have = $10 " " $12 " " $14; want = ($2 in v) ? v[$2] : last
        if (have != want) { printf "instance %s: %s, was %s", $2, have, want; exit } }' /tmp/nps.orig /tmp/nps.now)
    [ -z "$REPLY" ] || { REPLY="stop exit $STOP_RC; $REPLY"; return 1; }
    REPLY="stop exit $STOP_RC; $(wc -l < /tmp/nps.now) instances as before the daemon"
    [ $STOP_RC = 0 ]
  }
  check restored "systemctl stop: every NAPI instance of $NIC back at its values from before" -- nps_restored
  # Every instance at its boot values whatever the daemon left (later scenarios measure the NIC).
  $NAPI list "$NIC" 2>/dev/null | awk 'NR == FNR { v[$2] = $0; last = $0; next }
    { split(($2 in v) ? v[$2] : last, b, " "); print $2, "defer", b[10], "gro", b[12], (b[14] == -1 ? "" : "suspend " b[14]) }' /tmp/nps.boot - |
    while read -r id kv; do $NAPI set "$id" $kv 2>/dev/null; done
else
  result restored PASS "not on $NPS_KERNEL: stop exit $STOP_RC"
fi
rm -f $DROPINS/56-napi.toml
systemctl start $UNIT
