# irqwise %postun: let systemd forget the removed (or replaced) unit file.
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
fi
# $1 = 0: erased, not upgraded. Leave the administrator's drop-ins alone.
if [ "$1" -eq 0 ]; then
	rmdir --ignore-fail-on-non-empty /etc/irqwise/conf.d /etc/irqwise 2>/dev/null || :
fi
exit 0
