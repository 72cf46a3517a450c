"""The chains of tasks the DAG files wire, one module per kind of run, built once here.

- :mod:`~kafkalab.airflow.chains.latency`: ``latency_experiment`` (and the nightly's core);
- :mod:`~kafkalab.airflow.chains.load`: ``load_experiment`` (and the nightly's fan-out cell);
- :mod:`~kafkalab.airflow.chains.faults`: ``resilience_experiment`` (and the nightly's fault
  trial);
- :mod:`~kafkalab.airflow.chains.startup`: ``startup_experiment`` (seed 000's first-message
  delay);
- :mod:`~kafkalab.airflow.chains.nightly`: ``nightly_latency_regression``, the three composed;
- :mod:`~kafkalab.airflow.chains.parts`: what they share (assets, the task context, the
  ``name_run`` task, the watcher's verdict).

Every chain ends in ``verify_outcome`` (``one_failed``: it runs only when a task failed, and
fails naming every run's problem, so the DAG run is marked failed). The tasks that load the
cluster (``prepare_run``, ``measure_cell``, ``start_load_run``, ``run_load_cell``,
``start_fault_run``, ``run_fault_trial``, ``run_startup``) run in the one-slot pool ``kafkalab_measure``
(:mod:`kafkalab.airflow.pools`), shared by every DAG. Building a chain is cheap at DAG-parse
time: no file, network or database access; the logic lives in :mod:`kafkalab.airflow.tasks`,
:mod:`~kafkalab.airflow.load_tasks`, :mod:`~kafkalab.airflow.fault_tasks` and
:mod:`~kafkalab.airflow.startup_tasks` and runs only
inside tasks. Trigger rules: ``docs/airflow.md``.
"""
