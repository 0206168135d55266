# podman: the image of `make image` (/root/irqwise.oci.tar) under a real container runtime
# (podman 4.3 and crun from Debian 12), as a Kubernetes DaemonSet runs it (issue 55): loaded,
# run privileged with the host's network and PIDs on a read-only root with a ConfigMap-shaped
# drop-in directory, reloaded by the ConfigMap's `..data` swap alone, stopped with SIGTERM
# (restore_on_exit); run without those settings it must name each one; and the claim hook
# (packaging/examples/oci-hook-irqwise-claim with its hooks.d files, installed as its header
# says) keeps the NIC's IRQs off an annotated container's cpuset while it runs. Leaves the unit
# running with its normal configuration, no container and no drop-in (the images stay).
SCEN=podman
now; PODMAN_T0=$NOW
OCI=/root/irqwise.oci.tar
VERSION=$(dpkg-query -W -f='${Version}' irqwise); VERSION=${VERSION%-*}
IMG=localhost/irqwise:$VERSION
# minbase has no D-Bus, which podman's systemd cgroup manager talks to: cgroupfs.
mkdir -p /etc/containers
printf '[engine]\ncgroup_manager = "cgroupfs"\n' > /etc/containers/containers.conf

# nic_off CPU...: no NIC queue mask in MASKS holds any of the CPUs, each is one CPU.
nic_off() {
  local e c
  all_single || return 1
  for e in $MASKS; do expand "${e#*=}"; for c in "$@"; do contains "$REPLY" "$c" && return 1; done; done
  return 0
}
# claim_row OWNER: REPLY = "CPUS HELD PID" of OWNER's claim in `irqwise claims --json`; false
# when it is not listed.
claim_row() {
  REPLY=$($IRQWISE claims --json 2>/dev/null | awk -f /guest/planrows.awk -v dump=1 | awk -v o="$1" '
    $1 ~ /^claims\.[0-9]+\.owner$/ && $2 == o { split($1, p, "."); i = p[2] }
    { v[$1] = $2 }
    END { if (i != "") print v["claims." i ".cpus"], v["claims." i ".held"], v["claims." i ".pid"] }')
  [ -n "$REPLY" ]
}
podman_rm() { podman rm -f "$@" >/dev/null 2>&1; }
podman_rm irqwise claimer

# image_loaded: `podman load` reads the OCI archive under its ref name; inspect shows what
# build.sh wrote.
ARCHIVE_BYTES=$(stat -c %s $OCI 2>/dev/null)
measure archive_bytes "${ARCHIVE_BYTES:-0}"
now; T0=$NOW
podman load -i $OCI > /tmp/podman-load.out 2>&1; RC=$?
now; measure load_ms $((NOW - T0))
LOADED=$(sed -n 's/^Loaded image[^:]*: *//p' /tmp/podman-load.out | tail -1)
note "podman load: $(tr '\n' '|' < /tmp/podman-load.out | tail -c 300)"
image_loaded() {
  local ep ver src lic size
  [ $RC = 0 ] || { REPLY="podman load: exit $RC: $(tail -c 200 /tmp/podman-load.out)"; return 1; }
  ep=$(podman image inspect --format '{{json .Config.Entrypoint}} {{json .Config.Cmd}}' "$IMG" 2>&1)
  ver=$(podman image inspect --format '{{index .Labels "org.opencontainers.image.version"}}' "$IMG" 2>&1)
  src=$(podman image inspect --format '{{index .Labels "org.opencontainers.image.source"}}' "$IMG" 2>&1)
  lic=$(podman image inspect --format '{{index .Labels "org.opencontainers.image.licenses"}}' "$IMG" 2>&1)
  size=$(podman image inspect --format '{{.Size}}' "$IMG" 2>&1)
  IMAGE_SIZE=$size
  REPLY="podman says: loaded $LOADED; entrypoint/cmd $ep; labels version $ver, source $src, licenses $lic; size $size bytes (archive $ARCHIVE_BYTES)"
  [ "$LOADED" = "$IMG" ] && [ "$ep" = '["/usr/sbin/irqwise"] ["run","--watch-config"]' ] &&
    [ "$ver" = "$VERSION" ] && [ -n "$src" ] && [ "$lic" = "MIT OR Apache-2.0" ]
}
check image_loaded "podman load -i the archive: $IMG, its entrypoint and OCI labels" -- image_loaded
measure image_size_bytes "${IMAGE_SIZE:-0}"

# placed: the unit stops with restore_on_exit (a drop-in for this stop only), so the masks
# before the container are the machine's own and differ from the plan: the container must
# write them. Then the DaemonSet's settings, and a ConfigMap volume laid out as kubelet does.
printf '[global]\nrestore_on_exit = true\n' > $DROPINS/50-vm-podman.toml
systemctl reload $UNIT
systemctl stop $UNIT
rm -f $DROPINS/50-vm-podman.toml
read_masks "$NIC_IRQS"; BEFORE=$MASKS
CM=/root/configmap TS1=..2027_01_01_00_00_00.000000001 TS2=..2027_01_01_00_01_00.000000002
rm -rf $CM; mkdir -p $CM/$TS1
printf '[global]\nrestore_on_exit = true\n' > $CM/$TS1/50-fleet.toml
ln -s $TS1 $CM/..data
ln -s ..data/50-fleet.toml $CM/50-fleet.toml
# The same configuration for the host's `irqwise plan` (--config root): the image's main file is
# the package's.
PCFG=/tmp/podman-cfg
rm -rf $PCFG; mkdir -p $PCFG/etc/irqwise
cp /etc/irqwise/irqwise.toml $PCFG/etc/irqwise/; ln -s $CM $PCFG/etc/irqwise/conf.d
mkdir -p /run/irqwise /var/lib/prometheus/node-exporter
# container_pass: the state file is the container's daemon's (its pid, in the host's PID
# namespace) and holds a pass.
container_pass() {
  [ -n "$CPID" ] && [ "$CPID" != 0 ] || CPID=$(podman inspect --format '{{.State.Pid}}' irqwise 2>/dev/null)
  [ "$(awk -f /guest/planrows.awk -v get=pid /run/irqwise/state.json 2>/dev/null)" = "$CPID" ] &&
    [ "$(state_passes)" -ge 1 ] 2>/dev/null
}
CPID=""
now; T0=$NOW
podman run -d --name irqwise --privileged --network host --pid host --read-only \
  -v /run/irqwise:/run/irqwise -v /run/udev:/run/udev:ro \
  -v /var/lib/prometheus/node-exporter:/var/lib/prometheus/node-exporter \
  -v $CM:/etc/irqwise/conf.d:ro "$IMG" > /tmp/podman-run.out 2>&1; RUN_RC=$?
now; measure run_returned_ms $((NOW - T0))
wait_until 20000 container_pass; PASS_MS=$WAITED_MS
measure first_pass_ms "$PASS_MS"
read_masks "$NIC_IRQS"; PLACED=$MASKS
placed() {
  [ $RUN_RC = 0 ] || { REPLY="podman run: exit $RUN_RC: $(tail -c 300 /tmp/podman-run.out)"; return 1; }
  [ "$PASS_MS" -ge 0 ] || { REPLY="no pass of the container's daemon (pid ${CPID:-?}) in 20 s; state: $(head -c 200 /run/irqwise/state.json 2>/dev/null); logs: $(podman logs irqwise 2>&1 | tail -5 | tr '\n' '|')"; return 1; }
  with_cfg $PCFG placed_as_planned || return 1
  [ "$PLACED" != "$BEFORE" ] || { REPLY="$REPLY; but nothing moved: the masks were already so"; return 1; }
  REPLY="container pid $CPID, first pass after $PASS_MS ms; $REPLY"
}
check placed "podman run as the DaemonSet (--privileged --network host --pid host --read-only, ConfigMap volume): the NIC placed as planned" -- placed
if proc_sample "${CPID:-0}"; then
  measure container_rss_kb "$S_RSS"; measure container_rss_split "$S_ANON kB anonymous, $S_FILE kB file-backed"; measure container_threads "$S_THREADS"
fi
PROBLEMS=$(podman logs irqwise 2>&1 | grep -iE '\b(error|warn(ing)?|panic)' | head -3 | tr '\n' '|')
[ -z "$PROBLEMS" ] || note "container log problems: $PROBLEMS"
clean_log() { REPLY=${PROBLEMS:-none}; [ -z "$PROBLEMS" ]; }
check container_log_clean "the container's daemon logged no error, warning or panic at start" -- clean_log

# reload: kubelet's update of the ConfigMap (a new timestamped directory, `..data_tmp` renamed
# over `..data`, the old directory removed), no signal: the IRQs leave the banned CPU.
set -- $PLACED; BAN=${1#*=}
RELOADS0=$(awk -f /guest/planrows.awk -v get=counters.reloads.applied /run/irqwise/state.json 2>/dev/null)
mkdir -p $CM/$TS2
printf '[global]\nrestore_on_exit = true\nbanned_cpus = "%s"\n' "$BAN" > $CM/$TS2/50-fleet.toml
ln -s $TS2 $CM/..data_tmp
now; T0=$NOW
mv -T $CM/..data_tmp $CM/..data
rm -rf "${CM:?}/$TS1"
settle "$NIC_IRQS" "nic_off $BAN" 10000; RELOAD_MS=$SETTLE_MS
measure reload_ms "$RELOAD_MS"
reloaded() {
  local n log
  read_masks "$NIC_IRQS"; local now_masks=$MASKS
  [ "$RELOAD_MS" -ge 0 ] || { REPLY="the queues did not leave CPU $BAN within 10 s: $now_masks"; return 1; }
  with_cfg $PCFG plan_ok || return 1
  matches_plan "$NIC_IRQS" || return 1
  n=$(awk -f /guest/planrows.awk -v get=counters.reloads.applied /run/irqwise/state.json 2>/dev/null)
  log=$(podman logs irqwise 2>&1 | grep -i -m1 'reload')
  REPLY="off CPU $BAN after $RELOAD_MS ms, as the new plan: $now_masks; reloads applied ${RELOADS0:-?} -> ${n:-?}, trigger reload: $(state_has reload && echo yes || echo no); podman logs: ${log:-nothing about a reload}"
  [ "${n:-0}" -gt "${RELOADS0:-0}" ] 2>/dev/null && state_has reload && [ -n "$log" ]
}
check reload "the ConfigMap's ..data swapped (banned_cpus = CPU $BAN), no signal: reloaded, the IRQs leave CPU $BAN" -- reloaded

# stop_restores: `podman stop` (SIGTERM) ends the daemon, which puts back the masks from
# before it (restore_on_exit), and exits 0.
now; T0=$NOW
podman stop irqwise > /tmp/podman-stop.out 2>&1; RC=$?
now; measure stop_ms $((NOW - T0))
read_masks "$NIC_IRQS"; AFTER=$MASKS
stop_restores() {
  local code log
  code=$(podman inspect --format '{{.State.ExitCode}}' irqwise 2>&1)
  log=$(podman logs irqwise 2>&1 | grep -m1 -E 'restored [0-9]+ of [0-9]+')
  REPLY="podman stop: exit $RC; container exit code $code; masks $AFTER (before the container: $BEFORE); podman logs: ${log:-no restore line}"
  [ $RC = 0 ] && [ "$code" = 0 ] && [ "$AFTER" = "$BEFORE" ] && [ -n "$log" ]
}
check stop_restores "podman stop (SIGTERM): the masks from before the container are back, exit code 0" -- stop_restores
podman logs irqwise > /tmp/podman-daemon.log 2>&1
note "container log: $(tail -8 /tmp/podman-daemon.log | tr '\n' '|')"
podman_rm irqwise

# diagnosis: the image run as is (no privileges, its own network and PID namespaces; `--network
# none`: the netns has only lo, and no firewall package is needed) says each missing setting in
# one line at start; diagnosis_once: and in no other line.
podman run --rm --network none "$IMG" run --once --log-format text > /tmp/podman-diag.out 2>&1; DIAG_RC=$?
note "unprivileged run --once: exit $DIAG_RC: $(head -c 600 /tmp/podman-diag.out | tr '\n' '|')"
# diag_lines PATTERN...: the output's lines holding every fixed string PATTERN.
diag_lines() { local l=$(cat /tmp/podman-diag.out) p; for p in "$@"; do l=$(printf '%s\n' "$l" | grep -F -- "$p"); done; printf '%s' "$l" | grep -c .; }
diagnosis() {
  local p n h
  p=$(diag_lines 'in a container (' 'securityContext.privileged: true' '--privileged')
  n=$(diag_lines 'in a container (' 'hostNetwork: true' '--network host')
  h=$(diag_lines 'in a container (' 'hostPID: true' '--pid host')
  REPLY="exit $DIAG_RC; start lines naming privileged $p, hostNetwork $n, hostPID $h (Kubernetes and podman settings); panic: $(grep -ci panic /tmp/podman-diag.out)"
  [ "$p" = 1 ] && [ "$n" = 1 ] && [ "$h" = 1 ] && ! grep -qi panic /tmp/podman-diag.out
}
check diagnosis "podman run without --privileged/--network host/--pid host: one line at start naming each, no panic" -- diagnosis
diagnosis_once() {
  local k n extra="" total=0
  for k in securityContext.privileged hostNetwork hostPID; do
    n=$(diag_lines "$k"); total=$((total + n))
    [ "$n" -le 1 ] || extra="$extra $k in $n lines;"
  done
  REPLY="${extra:- each named in one line}"
  [ -z "$extra" ] || REPLY="$REPLY the others: $(grep -F securityContext.privileged /tmp/podman-diag.out | grep -vF 'in a container (' | cut -c 29-260 | tr '\n' '|')"
  [ -z "$extra" ]
}
check diagnosis_once "no other line of that run names a setting again" -- diagnosis_once

# hook_claims / hook_releases: the unit again; the hook installed as its header says, its two
# hooks.d files as shipped; a container of a tiny image (sleep and its libraries, `podman
# import`) with the annotation and a cpuset of two CPUs the NIC's queues use.
systemctl start $UNIT
read_masks "$NIC_IRQS"; HOST_MASKS=$MASKS
set -- $HOST_MASKS; C1=${1#*=} C2=${2#*=}
install -D -m 0755 /usr/share/doc/irqwise/examples/oci-hook-irqwise-claim /usr/libexec/irqwise/oci-hook-irqwise-claim
HOOKS=/tmp/podman-hooks.d
rm -rf $HOOKS; mkdir -p $HOOKS
cp /usr/share/doc/irqwise/examples/oci-hook-irqwise-claim.json /usr/share/doc/irqwise/examples/oci-hook-irqwise-release.json $HOOKS/
ANNOTATION=$(sed -n 's/.*"annotations": *{ *"\([^"]*\)": *"\([^"]*\)".*/\1=\2/p' $HOOKS/oci-hook-irqwise-claim.json)
T=/tmp/sleeper
rm -rf $T; mkdir -p $T/usr/bin; cp /usr/bin/sleep $T/usr/bin/
for lib in $(ldd /usr/bin/sleep | grep -o '/[^ ]*'); do install -D "$(readlink -f "$lib")" "$T$lib"; done
tar -C $T -cf /tmp/sleeper.tar . && podman import /tmp/sleeper.tar localhost/sleeper:1 > /dev/null 2>&1
now; T0=$NOW
podman --hooks-dir $HOOKS run -d --name claimer --annotation "$ANNOTATION" --cpuset-cpus "$C1,$C2" \
  --network none localhost/sleeper:1 /usr/bin/sleep 30 > /tmp/podman-claimer.out 2>&1; RC=$?
now; measure hook_run_returned_ms $((NOW - T0))
CID=$(tail -1 /tmp/podman-claimer.out); OWNER=container-$(printf '%s' "$CID" | cut -c1-32)
settle "$NIC_IRQS" "nic_off $C1 $C2" 15000; CLAIM_MS=$SETTLE_MS
measure hook_claim_ms "$CLAIM_MS"
hook_claims() {
  local pid
  [ $RC = 0 ] || { REPLY="podman run: exit $RC: $(tail -c 300 /tmp/podman-claimer.out)"; return 1; }
  pid=$(podman inspect --format '{{.State.Pid}}' claimer 2>/dev/null)
  claim_row "$OWNER" || { REPLY="no claim $OWNER in irqwise claims; masks $MASKS"; return 1; }
  local row=$REPLY
  read_masks "$NIC_IRQS"
  REPLY="annotation $ANNOTATION, cpuset $C1,$C2; claim $OWNER: $row (container pid $pid); NIC off $C1,$C2 after $CLAIM_MS ms: $MASKS"
  set -- $row
  [ "$CLAIM_MS" -ge 0 ] && [ "$1" = "$C1,$C2" ] && [ "$2" = true ] && [ "$3" = "$pid" ]
}
check hook_claims "podman run with the claim annotation and --cpuset-cpus through the shipped hook: claimed, the NIC's IRQs leave the cpuset" -- hook_claims
jmark
now; T0=$NOW
podman stop -t 0 claimer > /dev/null 2>&1
settle "$NIC_IRQS" '[ "$MASKS" = "$HOST_MASKS" ]' 15000; RELEASE_MS=$SETTLE_MS
measure hook_release_ms "$RELEASE_MS"
hook_releases() {
  local line said
  line=$(jsince -u $UNIT | grep -m1 "claim $OWNER" | sed 's/^\[[^]]*\] [^ ]* //')
  said="queues back after $RELEASE_MS ms: $MASKS; journal: ${line:-nothing}"
  REPLY=$said
  [ "$CLAIM_MS" -ge 0 ] || { REPLY="no claim to release (hook_claims failed); $said"; return 1; }
  [ "$RELEASE_MS" -ge 0 ] && [ -n "$line" ] || return 1
  # The poststop hook runs at the container's cleanup: wait for it as well.
  now; T0=$NOW
  if ! wait_until 10000 eval '! claim_row "$OWNER"'; then claim_row "$OWNER"; REPLY="$said; still listed: $REPLY"; return 1; fi
  REPLY="$said; not in irqwise claims"
}
check hook_releases "podman stop: the claim released (pidfd or poststop hook) and the NIC's IRQs back" -- hook_releases
podman_rm claimer
rm -rf "$CM" $PCFG $HOOKS $T /tmp/sleeper.tar /usr/libexec/irqwise /etc/containers/containers.conf
host_back() {
  REPLY="$(prop ActiveState); conf.d: $(ls $DROPINS | tr '\n' ' ')"
  [ "$(prop ActiveState)" = active ] && ! [ -e $DROPINS/50-vm-podman.toml ] && placed_as_planned
}
check host_back "the unit runs again with its normal configuration, the NIC as planned" -- host_back
now; measure scenario_ms $((NOW - PODMAN_T0))
