# irqbalance: installed and enabled in the guest. Starting irqwise stops it (Conflicts=); the
# package warns about the enabled irqbalance when installed, both in the image's chroot and on
# the running system.
SCEN=irqbalance
systemctl stop irqwise.service
systemctl start irqbalance.service
ib_runs() { REPLY="irqbalance $(prop irqbalance.service ActiveState), enabled: $(systemctl is-enabled irqbalance.service)"; [ "$(prop irqbalance.service ActiveState)" = active ]; }
check ib_started "irqbalance (enabled by its package) runs" -- ib_runs
systemctl start irqwise.service
conflict() {
  REPLY="irqwise $(prop ActiveState), irqbalance $(prop irqbalance.service ActiveState)"
  [ "$(prop ActiveState)" = active ] && [ "$(prop irqbalance.service ActiveState)" = inactive ]
}
check conflicts "starting irqwise stopped irqbalance" -- conflict
check placed "irqwise placed the queues again" -- placed_as_planned

WARNING='irqbalance.service is enabled'
chroot_warns() { REPLY=$(grep -m1 -F "$WARNING" /guest/chroot-install.log); [ -n "$REPLY" ]; }
check install_warns_chroot "dpkg -i in the image's chroot warned" -- chroot_warns
PID0=$(main_pid)
dpkg -i /root/irqwise.deb > /tmp/dpkg.log 2>&1; RC=$?
live_warns() { REPLY="dpkg -i: exit $RC; $(grep -m1 -F "$WARNING" /tmp/dpkg.log)"; [ $RC = 0 ] && grep -qF "$WARNING" /tmp/dpkg.log; }
check install_warns_live "dpkg -i on the running system warned" -- live_warns
reinstalled() { REPLY="MainPID $PID0 -> $(main_pid), $(prop ActiveState)"; [ "$(prop ActiveState)" = active ] && [ "$(main_pid)" != "$PID0" ]; }
check reinstall_restarts "the reinstall restarted the service (postinst)" -- reinstalled
