# report.awk: turns the guest's RESULT/MEASURE lines into test results and the measured tables.
# usage: awk -v md=SECTION.md -v meta="..." [-v tier=systemd] -f report.awk EXPECTED GUEST_OUT
# EXPECTED holds "scenario check" pairs (every check the scenario scripts contain): one that the
# guest never reported (crash, hang, timeout) counts as failed. A check reported SKIP (a marked
# placeholder) counts as neither passed nor failed. Prints one line per check, the tables, and
# "N passed, M failed[, K skipped]"; writes the tier's section of RESULTS.md as Markdown to md:
# the kernel tier's comparison tables, or (tier=systemd) the table of every check with its output.
# Exit 1 on any failure.
FNR == NR { if (!(($1 " " $2) in expected)) { expected[$1 " " $2] = 1; order[++n_exp] = $1 " " $2 }; next }
/^RESULT / {
  k = $2 " " $3; status[k] = $4
  d = $0; sub(/^RESULT [^ ]+ [^ ]+ [^ ]+ ?/, "", d); detail[k] = d
  if (!(k in expected)) { expected[k] = 1; order[++n_exp] = k }
  next
}
/^MEASURE / { v = $0; sub(/^MEASURE [^ ]+ [^ ]+ /, "", v); m[$2 " " $3] = v; next }
/^@@DONE/ { done = 1 }
function val(k) { return (k in m) ? m[k] : "n/a" }
function ms(k,   v) { v = val(k); if (v == "n/a") return v; if (v < 0) return "not within 30 s"; return v " ms" }
function msx(k,   v) { v = val(k); if (v == "n/a") return v; if (v < 0) return "timed out"; return v " ms" }
function yes(k,   v) { v = val(k); if (v == "n/a") return v; return (v < 0) ? "no (within 25 s)" : "yes, " v " ms" }
function cpu(s,   v) { v = val(s " idle_cpu_ms"); return v == "n/a" ? v : v " ms" }
function rss(s) { return val(s " idle_rss_kb") == "n/a" ? "n/a" : val(s " idle_rss_kb") " kB (" val(s " idle_rss0_kb") " kB)" }
function out(s) { print s; print s > md }
END {
  for (i = 1; i <= n_exp; i++) {
    k = order[i]
    if (!(k in status)) { status[k] = "FAIL"; detail[k] = "not reported by the guest" (done ? "" : " (guest did not finish)") }
    split(k, p, " ")
    printf "%-4s %s/%s  %s\n", status[k], p[1], p[2], detail[k]
    if (status[k] == "PASS") pass++
    else if (status[k] == "SKIP") skip++
    else { fail++; failed[p[1]]++; fails = fails "- FAIL " p[1] "/" p[2] ": " detail[k] "\n" }
    total[p[1]]++
  }
  print ""
  if (tier == "systemd") systemd_tables(); else kernel_tables()
  line = sprintf("%d passed, %d failed%s", pass, fail, skip ? sprintf(", %d skipped", skip) : "")
  print line
  print line > md
  if (fail) printf "\n%s", fails > md
  exit fail > 0 ? 1 : 0
}
function md_cell(s) { gsub(/\|/, "\\|", s); return s }
function systemd_tables(   i, k, p) {
  print "## irqwise under systemd: the package in a Debian 12 guest, systemd as PID 1" > md
  print "" > md
  out("Guest: " meta)
  out("")
  print "| scenario | check | result | what is checked: output |" > md
  print "|---|---|---|---|" > md
  for (i = 1; i <= n_exp; i++) {
    k = order[i]; split(k, p, " ")
    print "| " p[1] " | " p[2] " | " status[k] " | " md_cell(detail[k]) " |" > md
  }
  out("")
  out("| measured (TCG, not asserted) | value |")
  out("|---|---|")
  out("| boot to the guest program (uptime) | " val("harness boot_s") " s |")
  out("| `systemctl start` (returns after READY=1, i.e. the first pass) | " msx("start start_ms") " |")
  out("| `systemctl reload`, valid drop-in (returns after the reload pass) | " msx("reload valid_ms") " |")
  out("| SIGSTOP to a new main process, active (WatchdogSec=" val("restart watchdog_sec") ", RestartSec=" val("config-error restart_sec") ") | " msx("restart watchdog_restart_ms") " |")
  out("| SIGSEGV to a new main process, active | " msx("restart segv_restart_ms") " |")
  out("| CPU offline to re-placed; online to restored | " msx("events offline_react_ms") "; " msx("events online_react_ms") " |")
  out("| link up to the daemon's pass for it | " msx("events link_seen_ms") " |")
  out("| threaded NAPI on to every NAPI thread on its IRQ's CPUs (2 s reconcile drop-in) | " msx("napi follow_ms") " |")
  out("| `systemctl reload` with [napi] to the profile on every NAPI instance (napi-set from the sandbox) | " ((("napi-profile napi_set") in m && val("napi-profile napi_set") != "yes") ? "no napi-set on " val("harness kernel") : msx("napi-profile applied_ms")) " |")
  out("| `irqwise claim --cpus 4-5 --pid` beside the unit, until it returned; the process killed to queues back | " msx("claim claim_ms") "; " msx("claim release_ms") " |")
  out("| irqbalance's socket: `settings cpus 4,5` to the queues off them; `settings cpus NULL` to back | " msx("irqbalance-socket cpus_ms") "; " msx("irqbalance-socket null_ms") " |")
  out("| `podman load` of the image archive (" val("podman archive_bytes") " bytes); the image's size (podman) | " msx("podman load_ms") "; " val("podman image_size_bytes") " bytes |")
  out("| the image as the DaemonSet runs it: `podman run -d` returned; the container's first pass; its daemon's VmRSS | " msx("podman run_returned_ms") "; " msx("podman first_pass_ms") "; " val("podman container_rss_kb") " kB (" val("podman container_rss_split") ") |")
  out("| the ConfigMap's `..data` swapped (a banned CPU) to the IRQs off it; `podman stop` (SIGTERM, masks restored) | " msx("podman reload_ms") "; " msx("podman stop_ms") " |")
  out("| the claim hook: annotated `podman run --cpuset-cpus` returned; to the NIC off the cpuset; `podman stop` to the IRQs back | " msx("podman hook_run_returned_ms") "; " msx("podman hook_claim_ms") "; " msx("podman hook_release_ms") " |")
  out("| containerd 2.x (sid tier): `systemctl start containerd`; `ctr images import` of the pause and busybox images; `systemctl restart irqwise` with `nri = true` to containerd's \"plugin connected\" | " msx("containerd containerd_start_ms") "; " msx("containerd import_ms") "; " msx("containerd nri_connect_ms") " |")
  out("| an annotated pod through CRI: StartContainer called to the NIC off its cpuset; StopContainer called (then RemoveContainer, StopPodSandbox, RemovePodSandbox) to the NIC back | " msx("containerd start_to_off_ms") "; " msx("containerd stop_to_back_ms") " |")
  out("| irqwise restarted while the pod runs (claim files removed, NIC scrambled) to the claim back from Synchronize; `systemctl restart containerd` returned to the plugin connected again | " msx("containerd restart_to_off_ms") "; " msx("containerd reconnect_ms") " |")
  out("| `nri_exclusive_cpus`: an unannotated exclusive pod's StartContainer called to the NIC off it; `cpu_manager_state` written to the NIC off its entry's CPUs; the entry removed to back | " msx("containerd exclusive_start_to_off_ms") "; " msx("containerd kubelet_state_to_off_ms") "; " msx("containerd kubelet_state_to_back_ms") " |")
  out("| `podman kube play` of the shipped manifest (sid tier, podman " val("podman-kube podman_version") "): `podman load`; `kube play` returned; `kube play` called to its daemon's pass 1 (the daemon's log); its VmRSS; `podman kube down` (SIGTERM, masks restored) | " msx("podman-kube load_ms") "; " msx("podman-kube play_ms") "; " msx("podman-kube first_pass_ms") "; " val("podman-kube container_rss_kb") " kB; " msx("podman-kube down_ms") " |")
  out("")
}
function kernel_tables() {
  print "## irqwise end-to-end on a real kernel (QEMU, busybox init)" > md
  print "" > md
  out("Guest: " meta)
  out("")
  out("| Scenario | Checks passed | Reaction time (TCG, pessimistic) |")
  out("|---|---|---|")
  split("harness report startup cpu-offline xps napi-threads netdev-survey napi-instance reconfig partition link-flap nic-hotplug napi-profile sighup claim balance idle storm cli-agree two-nics irqbalance", sc, " ")
  r["harness"] = "-"
  r["report"] = "-"
  r["startup"] = "daemon start to all NIC queues placed: " ms("startup place_ms")
  r["cpu-offline"] = "CPU offline to re-planned: " ms("cpu-offline offline_react_ms") "; online to restored: " ms("cpu-offline online_react_ms")
  r["xps"] = "banned list written to re-placed: " ms("xps banned_react_ms") "; removed to restored: " ms("xps unbanned_react_ms")
  r["napi-threads"] = "threaded on to threads placed: " ms("napi-threads start_ms") "; CPU offline: " ms("napi-threads offline_ms") "; online: " ms("napi-threads online_ms") "; moved by another writer: " ms("napi-threads drift_ms") "; threaded off and on: " ms("napi-threads toggle_on_ms")
  r["netdev-survey"] = "-"
  r["napi-instance"] = (("napi-instance result") in m) ? val("napi-instance result") : "napi-set threaded on one instance to its thread on its IRQ's CPUs (2 s reconcile): " ms("napi-instance follow_ms")
  r["reconfig"] = "writes per reconfiguration below"
  r["partition"] = (("partition result") in m) ? val("partition result") : "isolated partition made to IRQs off its CPUs: " ms("partition off_ms") "; removed to back: " ms("partition back_ms")
  r["link-flap"] = "link up to placed: " ms("link-flap up_react_ms") (val("link-flap kernel_kept") == "yes" ? " (nothing to restore: the kernel kept the masks across free_irq/request_irq)" : "")
  r["nic-hotplug"] = "link up of the new NIC to placed: " ms("nic-hotplug place_ms") "; device_del to gone: " ms("nic-hotplug remove_ms")
  r["napi-profile"] = (("napi-profile napi_set") in m && val("napi-profile napi_set") != "yes") ? "no napi-set on " val("harness kernel") " (6.13 and later)" : "[napi] on every instance after start: " msx("napi-profile start_ms") "; per-queue table (reload): " msx("napi-profile per_queue_ms") "; ethtool -L 1 / 4: " msx("napi-profile ethtool_L1_ms") " / " msx("napi-profile ethtool_L4_ms") "; link up (virtio, eth0): " msx("napi-profile link_" val("napi-profile virtio_if") "_ms") ", " msx("napi-profile link_eth0_ms")
  r["sighup"] = "SIGHUP to re-placed on node 0: " ms("sighup node0_react_ms") "; back: " ms("sighup restore_react_ms")
  r["claim"] = "`irqwise claim --cpus 4-5 --pid` until it returned (movable IRQs off 4-5): " ms("claim claim_ms") "; claimed process killed to queues back (pidfd, no reconcile): " ms("claim release_ms")
  r["balance"] = "two busy queues on one CPU to split (balance = \"load\", 2 s samples): " ms("balance split_ms") "; load stopped to back home (10 s hold): " ms("balance return_ms")
  r["idle"] = "-"
  r["storm"] = "end of the storm to the placement from before: " ms("storm settle_ms")
  r["cli-agree"] = "-"
  r["two-nics"] = "-"
  r["irqbalance"] = "one pass (--oneshot): " ms("irqbalance oneshot_ms")
  for (i = 1; i in sc; i++) {
    s = sc[i]; if (!(s in total)) continue
    out("| " s " | " (total[s] - failed[s]) "/" total[s] " | " r[s] " |")
  }
  out("")
  out("| NIC placement (eth0, 8 queue IRQs, NIC on node 1) | irqwise | irqbalance 1.9 |")
  out("|---|---|---|")
  out("| queue IRQs whose mask lies on the NIC's node | " val("startup node_share") " | " val("irqbalance node_share") " |")
  out("| distinct cores the queues are delivered to | " val("startup distinct_cores") " | " val("irqbalance distinct_cores") " |")
  out("| masks, queue 0..7 | " val("startup masks") " | " val("irqbalance masks") " |")
  out("| CPU offline: queues off the offline CPU and the kernel's fallback | " yes("cpu-offline offline_react_ms") " | " yes("irqbalance offline_react_ms") " |")
  out("| CPU back online: previous placement returns | " yes("cpu-offline online_react_ms") " | " yes("irqbalance online_react_ms") " |")
  out("")
  out("| CPU offline (CPU of queue 0): IRQs written, all NICs | " val("cpu-offline offline_writes") " | - |")
  out("")
  out("| CPU storm: offline/online cycles of queue 0's CPU, back to back | irqwise | irqbalance 1.9 |")
  out("|---|---|---|")
  out("| cycles; the storm's duration | " val("storm cycles") " of CPU " val("storm cpu") "; " msx("storm storm_ms") " | " val("irqbalance storm_cycles") " of CPU " val("irqbalance storm_cpu") "; " msx("irqbalance storm_ms") " |")
  out("| passes run (storm and settling) | " val("storm passes") " | - |")
  out("| IRQ writes (counter; logged) | " val("storm writes") "; " val("storm logged_writes") " | - |")
  out("| masks before the storm, queue 0..7 | " val("storm initial_masks") " | " val("irqbalance storm_initial") " |")
  out("| masks after it (irqbalance: 12 s later, past its interval) | " val("storm final_masks") " | " val("irqbalance storm_final") " |")
  out("| final placement = initial | " val("storm final_equal") " | " val("irqbalance storm_final_equal") " |")
  out("| RSS after the storm | " val("storm rss_kb") " kB | - |")
  out("")
  out("| Load: two pinned pings busy on queues 0 and 1, which share a CPU (queues_per_cpu = 2), 30 s | irqwise, balance = \"load\" | irqbalance 1.9 |")
  out("|---|---|---|")
  out("| queue IRQ moves in the 30 s | " val("balance moves") " | " val("irqbalance balance_moves") " |")
  out("| where queues 0 and 1 end | " val("balance end_masks") " | " val("irqbalance balance_end_masks") " |")
  out("| load to split; load stopped to back home | " ms("balance split_ms") "; " ms("balance return_ms") " | - |")
  out("| 40 s of load alternating every 10 s between queues 0+1 and 2+3: IRQ moves | " val("balance alternating_moves") " | " val("irqbalance alternating_moves") " |")
  out("| queue masks after it, queue 0..7 | " val("balance alternating_end") " | " val("irqbalance alternating_end") " |")
  out("| 30 s of constant load on queues 0, 1 (one CPU) and 2: moves; returns (back and forth) | " val("balance constant_moves") "; " val("balance constant_returns") " | - |")
  out("")
  out("| Two vmxnet3 NICs on node 1 (16 queue IRQs, 8 CPUs) | irqwise | irqbalance 1.9 |")
  out("|---|---|---|")
  out("| queue IRQs per CPU (effective affinity, cpu:count) | " val("two-nics load_irqwise") " | " val("irqbalance load_both") " |")
  out("| CPU offline: queue IRQs rewritten (queues that lived on the CPU) | " val("two-nics offline_writes") " (" val("two-nics offline_lived") ") | " val("irqbalance offline_moved") " (eth0's queue 0 CPU) |")
  out("| CPU back online: queue IRQs rewritten | " val("two-nics online_writes") " | - |")
  out("| `queues_per_cpu = 4`: CPUs of each NIC | " val("two-nics disjoint_cpus") " | - |")
  out("")
  out("Node 1 has 4 CPUs for 8 queues: irqwise gives every queue its own CPU by NUMA distance (node 1's")
  out("cores, their siblings, then node 0); irqbalance (idle NIC) stacks the 8 queues on node 1's CPUs.")
  out("irqbalance reacts at its 10 s rebalancing interval; irqwise on the CPU-hotplug uevent.")
  out("")
  if (("xps startup") in m) {
    out("| eth0 transmit steering (tx queue: CPUs sending on it, from xps_cpus) | |")
    out("|---|---|")
    out("| after placement | " val("xps startup") " |")
    out("| CPU " val("xps offline_cpu") " (queue 1's) offline | " val("xps offline") " |")
    out("")
    out("Each tx queue's set is the CPUs for which its IRQ is the nearest, checked in the guest from sysfs")
    out("(SMT siblings, cluster, LLC, node) against the IRQs' smp_affinity_list.")
    out("")
  }
  if (("napi-threads start_threads") in m) {
    out("| eth0 with threaded NAPI (`threaded` = 1): where the 8 NAPI threads may run | irqwise | irqbalance 1.9 |")
    out("|---|---|---|")
    out("| each thread on its queue IRQ's CPUs | " (val("napi-threads start_ms") ~ /^-/ ? "no" : "yes") " | " val("irqbalance napi_threads_follow") " |")
    out("| threads' Cpus_allowed_list, queue 0..7 | " val("napi-threads start_threads") " | " val("irqbalance napi_threads") " |")
    out("| threaded on to every thread placed; CPU of queue 0 offline; back online; a thread moved by another writer; threaded off and on | " ms("napi-threads start_ms") "; " ms("napi-threads offline_ms") "; " ms("napi-threads online_ms") "; " ms("napi-threads drift_ms") "; " ms("napi-threads toggle_on_ms") " | - |")
    out("| threads while `threaded` is off; the same pids when on again | " val("napi-threads toggle_off_threads") "; " val("napi-threads toggle_same_pids") " | - |")
    out("| queue identity (plan --json queue_source of the 8 queue IRQs) | " val("napi-threads identity") " | - |")
    out("| plan's notice about the kernel's netdev family | " val("napi-threads netdev_notice") " | - |")
    out("| QEMU NICs on " val("harness kernel") ": queue IRQs the kernel names through netdev netlink, and by name | vmxnet3: " val("netdev-survey vmxnet3") "; e1000e: " val("netdev-survey e1000e") "; e1000: " val("netdev-survey e1000") "; virtio-net-pci: " val("netdev-survey virtio-net-pci") (("netdev-survey result") in m ? " (" val("netdev-survey result") ")" : "") " | - |")
    out("")
    out("Threads are checked from /proc alone: vmxnet3 adds one NAPI instance per queue in queue order")
    out("and the kernel numbers them as added, so the i-th thread by NAPI id is queue i's. No event says")
    out("`threaded` changed: the next pass sees it (here the reconcile timer, set to 2 s for the scenario).")
    out("")
  }
  if (("reconfig rows") in m) {
    out("| Reconfigurations as drivers/net/hw/irq.py makes them, daemon running: mask writes it took (n/a: the driver refuses it) | link down/up | XDP attach and detach | `ethtool -L` to 1 and back | what `plan` says of the driver |")
    out("|---|---|---|---|---|")
    n_rows = split(val("reconfig rows"), rw, " ")
    for (i = 1; i <= n_rows; i++) { split(rw[i], f, ":"); cellv[f[1] " " f[2]] = f[3]; if (!(f[1] in seen_nic)) { seen_nic[f[1]] = 1; nics[++n_nics] = f[1] } }
    for (i = 1; i <= n_nics; i++) {
      nic = nics[i]
      out("| " nic " | " cellv[nic " link"] " | " cellv[nic " xdp"] " | " cellv[nic " channels"] " | " val("reconfig " nic "_resets") " |")
    }
    out("")
    out("After each, every IRQ of the NIC is where `irqwise plan` puts it (checked); where the driver")
    out("keeps its vectors and so the kernel keeps the masks, a write would be needless and must not")
    out("happen. virtio_net writes its own spread over its masks on `ethtool -L`: irqwise places them again.")
    out("")
  }
  if (("partition off_ms") in m) {
    out("| A cgroup v2 isolated partition of CPUs 6-7 made and removed at run time (eth0 threaded) | irqwise |")
    out("|---|---|")
    out("| made to eth0's queue IRQs, NAPI threads and XPS off 6-7; removed to the placement before | " ms("partition off_ms") "; " ms("partition back_ms") " |")
    out("| the kernel's files while isolated | " val("partition partition") " |")
    out("")
    out("The kernel notifies only the partition's own `cpuset.cpus.partition`; irqwise watches every cgroup's.")
    out("")
  }
  out("| Where eth0's interrupts land under a ping flood (`irqwise report`, 5 s) | kernel, before irqwise | irqbalance 1.9 | irqwise |")
  out("|---|---|---|---|")
  out("| interrupts per second | " val("report kernel_rate") " | " val("report irqbalance_rate") " | " val("report irqwise_rate") " |")
  out("| on the CPUs irqwise places them on (desired) | " val("report kernel_desired_pct") "% | " val("report irqbalance_desired_pct") "% | " val("report irqwise_desired_pct") "% |")
  out("| on the NIC's node | " val("report kernel_node_pct") "% | " val("report irqbalance_node_pct") "% | " val("report irqwise_node_pct") "% |")
  out("| CPUs the queue interrupts fired on | " val("report kernel_cpus") " | " val("report irqbalance_cpus") " | " val("report irqwise_cpus") " |")
  out("| queue masks, queue 0..7 | " val("report kernel_masks") " | " val("report irqbalance_masks") " | " val("report irqwise_masks") " |")
  out("| the report's line | " val("report kernel_line") " | " val("report irqbalance_line") " | " val("report irqwise_line") " |")
  out("")
  out("The flood (4 x `ping -A` to QEMU's user-network gateway) runs inside the guest; \"desired\" is")
  out("where `irqwise plan` puts each IRQ, so the kernel's and irqbalance's columns show how far their")
  out("placement is from irqwise's, measured from /proc/interrupts.")
  out("")
  out("| Idle cost over " val("idle idle_s") " s (nothing changing) | irqwise | irqbalance 1.9 |")
  out("|---|---|---|")
  out("| wake-ups: voluntary context switches, all threads | " val("idle idle_voluntary") " | " val("irqbalance idle_voluntary") " |")
  out("| involuntary context switches | " val("idle idle_involuntary") " | " val("irqbalance idle_involuntary") " |")
  out("| CPU time used (utime+stime, 10 ms ticks) | " cpu("idle") " | " cpu("irqbalance") " |")
  out("| RSS (VmRSS) at the end of the window (at its start) | " rss("idle") " | " rss("irqbalance") " |")
  out("| RSS at the end: anonymous, file-backed (binary, libraries) | " val("idle idle_rss_split") " | " val("irqbalance idle_rss_split") " |")
  out("| threads | " val("idle idle_threads") " | " val("irqbalance idle_threads") " |")
  out("| IRQ masks changed in the window | " val("idle idle_mask_changes") " | " val("irqbalance idle_mask_changes") " |")
  out("| passes run in the window (reconcile timer, every 60 s) | " val("idle idle_passes") " | - |")
  out("")
  out("Both measured in the same guest, one daemon running at a time, by sampling /proc/PID at the")
  out("start and end of the window (irqbalance's window is " val("irqbalance idle_s") " s, after its offline/online test).")
  out("")
}
