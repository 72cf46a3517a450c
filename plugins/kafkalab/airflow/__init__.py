"""The lab on Airflow: the task logic the DAGs in ``dags/`` wire together, one role a module.

| module | role |
|---|---|
| :mod:`kafkalab.airflow.tasks` | the task functions (``check_cluster`` … ``verify_outcome``): JSON in, JSON out |
| :mod:`kafkalab.airflow.connections` | one hook-style class per Airflow Connection, returning typed settings |
| :mod:`kafkalab.airflow.run_ids` | a DAG run's logical date (and run id) -> path-safe lab run id |
| :mod:`kafkalab.airflow.params` | the choices the trigger form offers |
| :mod:`kafkalab.airflow.callbacks` | the DAG ``on_failure_callback`` |
| :mod:`kafkalab.airflow.report_app` | the FastAPI app the plugin ``plugins/kafkalab_report_plugin.py`` mounts there |
| :mod:`kafkalab.airflow.launcher` | a loopback-only local Airflow (``python -m kafkalab.airflow.launcher``) |

Every module imports ``airflow`` (the real package: imports here are absolute) only inside
function bodies, and nothing does I/O at import time, so a DAG file may import any of them
while it is parsed. This ``__init__`` imports nothing.
"""
