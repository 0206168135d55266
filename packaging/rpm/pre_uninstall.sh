# irqwise %preun. $1 = 0: the package is being erased (not upgraded): disable and stop the service.
if [ "$1" -eq 0 ] && [ -d /run/systemd/system ]; then
	systemctl --no-reload disable --now irqwise.service >/dev/null 2>&1 || :
fi
exit 0
