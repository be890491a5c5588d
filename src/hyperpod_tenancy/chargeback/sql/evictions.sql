-- evictions: the month's preemption evictions, one row per evicted workload run.
-- Source: our `eviction` rows (collector schema v1, see queries.py). The team is the namespace without its
-- `hyperpod-ns-` prefix; the checkpoint interval is the admission annotation (NULL where none was declared);
-- last_checkpoint is the newest checkpoint before the eviction where the collector found one (else NULL).
-- Times keep their fractions of a second. One eviction is one workload's eviction at one instant: a record stored
-- twice (a copied object, a restored prefix) counts once; of copies that differ, the one that knows the latest
-- checkpoint is kept.
WITH records AS (
  SELECT
    *,
    ROW_NUMBER() OVER (
      PARTITION BY namespace, workload, "timestamp"
      ORDER BY last_checkpoint DESC NULLS LAST, admitted_at DESC NULLS LAST, gpus DESC, instance_type,
        priority_class, checkpoint_interval_minutes DESC NULLS LAST
    ) AS copy
  FROM {{eviction}}
  WHERE cluster = {{cluster}}
    AND year = {{year}} AND month = {{month}}
    AND "timestamp" >= {{month_start}} AND "timestamp" < {{month_end}}
)
SELECT
  date_format("timestamp", '%Y-%m-%d %H:%i:%s.%f') AS time,
  cluster,
  CASE WHEN namespace LIKE 'hyperpod-ns-%' THEN substr(namespace, 13) ELSE namespace END AS team,
  instance_type,
  workload,
  priority_class,
  CAST(gpus AS BIGINT) AS gpus,
  date_format(admitted_at, '%Y-%m-%d %H:%i:%s.%f') AS run_started,
  CAST(checkpoint_interval_minutes AS BIGINT) AS checkpoint_interval_minutes,
  date_format(last_checkpoint, '%Y-%m-%d %H:%i:%s.%f') AS last_checkpoint
FROM records
WHERE copy = 1
ORDER BY time, team, workload, instance_type
