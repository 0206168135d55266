//! `SIGHUP`: the configuration loaded again, validated against the machine as at start; an
//! invalid one is logged error by error and the one in force kept. The outcome goes to the state
//! file (`config_error`), where `irqwise reload` reads it.

use std::sync::Arc;

use super::parts::Daemon;
use super::{catalog, logging};
use crate::config::{load_config_with_warnings, ConfigWarning, Global, LoadError};

impl Daemon {
    /// Reloads the configuration; on any error logs each one and keeps the current config.
    pub fn reload(&mut self) {
        match load_config_with_warnings(&self.root, &self.paths) {
            Ok((config, warnings)) => {
                self.note_config_warnings(&warnings);
                self.apply_global(&config.global);
                tracing::info!("configuration reloaded from {} file(s)", config.sources.len());
                self.config = Arc::new(config);
                self.records.ledger.forget_warnings();
                if !self.respected.is_empty() {
                    tracing::info!(
                        "{} IRQ(s) left to other owners are placed again under the reloaded configuration",
                        self.respected.len()
                    );
                }
                self.respected.clear();
                self.records.napi_profiles.forget_left();
                if self.fights.len() > 0 {
                    tracing::info!(
                        "{} IRQ(s) fought over with another writer are restored again under the reloaded configuration",
                        self.fights.len()
                    );
                }
                self.fights.clear();
                self.records.reloaded(None);
            }
            Err(LoadError::Invalid(errors)) => {
                for e in &errors.0 {
                    tracing::error!("{e}");
                }
                tracing::error!(
                    message_id = catalog::CONFIG_REJECTED,
                    config_errors = errors.0.len(),
                    "configuration not reloaded ({} error(s)); keeping the previous one",
                    errors.0.len()
                );
                let lines: Vec<String> = errors.0.iter().map(ToString::to_string).collect();
                self.records.reloaded(Some(lines.join("\n")));
            }
            Err(e) => {
                tracing::error!(
                    message_id = catalog::CONFIG_REJECTED,
                    error = %e,
                    "configuration not reloaded: {e}; keeping the previous one"
                );
                self.records.reloaded(Some(e.to_string()));
            }
        }
    }

    /// Logs the configuration's warnings not logged before (at start; on reload only new ones:
    /// a fleet file's CPUs this machine lacks are said once).
    pub(crate) fn note_config_warnings(&mut self, warnings: &[ConfigWarning]) {
        for w in warnings {
            let text = w.to_string();
            if self.config_warned.failed(text.clone(), ()) {
                tracing::warn!("{}", crate::text::printable(&text));
            }
        }
    }

    /// Puts a reloaded `[global]` into force where it is not read at each pass: the debounce
    /// window (from the next batch), the reconcile period (restarted now) and the log sink; says
    /// that a new `kubelet_cpu_manager_state` is read from the next pass but watched only from
    /// the next start.
    fn apply_global(&mut self, new: &Global) {
        let old = &self.config.global;
        if new.debounce != old.debounce {
            self.debounce.send_replace(new.debounce);
            tracing::info!("debounce is now {:?} (was {:?})", new.debounce, old.debounce);
        }
        if new.reconcile_interval != old.reconcile_interval {
            self.reconcile.send_replace(new.reconcile_interval);
            tracing::info!("reconcile_interval is now {:?} (was {:?})", new.reconcile_interval, old.reconcile_interval);
        }
        if new.kubelet_cpu_manager_state != old.kubelet_cpu_manager_state {
            let shown = new.kubelet_cpu_manager_state.as_ref().map_or("none".into(), |p| format!("{:?}", p.display()));
            tracing::info!(
                "kubelet_cpu_manager_state is now {}: read from the next pass on; its changes are watched from the next start (until then each reconcile reads it)",
                crate::text::printable(&shown)
            );
        }
        if new.log_format != old.log_format {
            if self.log_format_pinned {
                tracing::info!("log_format in the configuration does not apply: --log-format was given");
            } else {
                match logging::switch(new.log_format) {
                    Ok(sink) => tracing::info!("log format is now {sink:?}"),
                    Err(e) => tracing::error!("log_format not applied: {e}; the log stays where it was"),
                }
            }
        }
    }
}
