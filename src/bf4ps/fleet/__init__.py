"""The operator control plane: egress gates and the fleet budget (conf.py), a collector's seed
of them (seed.py), and the collector registry's drain, resume, disable and retire
(collectors.py); used by the CLI, the operator console and the collectors' start."""
