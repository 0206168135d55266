#!/bin/sh
# A deliberately broken irqwise (IRQWISE_VM_BROKEN=1): accepts every command, places nothing.
case " $* " in
  *" --help "*) exit 0;;
  *" run "*) exec sleep 100000;;
esac
exit 0
