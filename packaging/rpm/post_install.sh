# irqwise %post. $1: number of irqwise packages installed after this transaction (1 = install,
# 2 = upgrade). systemctl only where systemd runs (not in image builds or chroots).

# The administrator's drop-in directory (not in the payload: see Cargo.toml); %postun removes it
# on erase when it is empty.
mkdir -p /etc/irqwise/conf.d
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
	if [ "$1" -eq 1 ]; then
		# Distribution presets decide whether a new service is enabled (as %systemd_post does).
		systemctl preset irqwise.service >/dev/null 2>&1 || :
	else
		systemctl try-restart irqwise.service >/dev/null 2>&1 || :
	fi
fi
exit 0
