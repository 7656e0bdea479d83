"""One run from start to end: preparation, the lifecycle, resume, the work area.

Entry points: `run.prepare.prepare_run` then `run.session.run_card`; `workers.manager.RunManager`
schedules runs for the language server.
"""
