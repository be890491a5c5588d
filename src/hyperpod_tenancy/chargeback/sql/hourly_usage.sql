-- hourly_usage: GPU-milliseconds each team's admitted workloads held, per clock hour and instance type.
-- Source: the usage-report operator's raw `clusterqueue` snapshots (one row per ClusterQueue, instance type
-- and snapshot; collector schema v1, see queries.py). As the operator's own CRESCENDO_SUMMARY does: keep the
-- latest resource_version per timestamp, and hold each snapshot's gpu_total / gpu_borrowed until the next
-- snapshot of the same queue and instance type (LEAD). The last snapshot holds until the end of the month;
-- the state at the start of the month is the newest snapshot of the previous month's partitions.
-- The window runs over a small integer queue id (one per instance type, namespace and team, numbered from the
-- few hundred distinct queues) and the snapshot columns only, as INTEGER GPU counts (Kubernetes GPUs are whole):
-- sorting ~5 M rows by three strings, and carrying them and DOUBLEs through the window, was most of its time. Names are joined back after the hourly sums. The
-- queues are read by a second scan of the same partitions (only three columns), not from `source`: sharing
-- it would materialize all its rows (strings included) and double the memory.
WITH source AS (
  SELECT
    instance_type,
    namespace,
    team,
    "timestamp" AS ts,
    CAST(resource_version AS BIGINT) AS rv,
    CAST(gpu_total AS INTEGER) AS gpus,
    CAST(gpu_borrowed AS INTEGER) AS borrowed_gpus
  FROM {{clusterqueue}}
  WHERE cluster = {{cluster}}
    AND ((year = {{year}} AND month = {{month}}) OR (year = {{previous_year}} AND month = {{previous_month}}))
    AND "timestamp" < {{month_end}}
),
queues AS (
  SELECT
    instance_type,
    CASE WHEN namespace LIKE 'hyperpod-ns-%' THEN substr(namespace, 13) ELSE team END AS team_name,
    namespace,
    team,
    CAST(ROW_NUMBER() OVER (ORDER BY instance_type, namespace, team) AS INTEGER) AS queue_id
  FROM (
    SELECT DISTINCT instance_type, namespace, team
    FROM {{clusterqueue}}
    WHERE cluster = {{cluster}}
      AND ((year = {{year}} AND month = {{month}}) OR (year = {{previous_year}} AND month = {{previous_month}}))
      AND "timestamp" < {{month_end}}
  ) AS distinct_queues
),
snapshots AS (
  SELECT
    q.queue_id,
    s.ts,
    s.gpus,
    s.borrowed_gpus,
    LEAD(s.ts) OVER (PARTITION BY q.queue_id ORDER BY s.ts, s.rv) AS next_ts
  FROM source AS s
  JOIN queues AS q ON s.instance_type = q.instance_type AND s.namespace = q.namespace AND s.team = q.team
),
-- ordered by time then resource_version, a row followed by a row of the same timestamp is an older version of
-- that snapshot: drop it; the latest version holds until the next timestamp (or the end of the month)
periods AS (
  SELECT queue_id, gpus, borrowed_gpus, ts AS period_start, COALESCE(next_ts, {{month_end}}) AS period_end
  FROM snapshots
  WHERE next_ts IS NULL OR next_ts > ts
),
clipped AS (
  SELECT
    queue_id,
    gpus,
    borrowed_gpus,
    GREATEST(period_start, {{month_start}}) AS s,
    LEAST(period_end, {{month_end}}) AS e
  FROM periods
  WHERE gpus > 0 AND period_end > {{month_start}} AND period_end > period_start
),
-- most periods (snapshots minutes apart) lie within one clock hour; only the others are split per hour
hourly AS (
  SELECT queue_id, gpus, borrowed_gpus, date_trunc('hour', s) AS h, date_diff('millisecond', s, e) AS overlap_ms
  FROM clipped
  WHERE e <= date_trunc('hour', s) + INTERVAL '1' HOUR
  UNION ALL
  SELECT
    queue_id,
    gpus,
    borrowed_gpus,
    h,
    date_diff('millisecond', GREATEST(s, h), LEAST(e, h + INTERVAL '1' HOUR)) AS overlap_ms
  FROM clipped
  CROSS JOIN UNNEST(SEQUENCE(date_trunc('hour', s), date_trunc('hour', e), INTERVAL '1' HOUR)) AS hours (h)
  WHERE e > date_trunc('hour', s) + INTERVAL '1' HOUR
),
per_queue AS (
  SELECT h, queue_id, SUM(gpus * overlap_ms) AS gpu_ms, SUM(borrowed_gpus * overlap_ms) AS borrowed_gpu_ms
  FROM hourly
  WHERE overlap_ms > 0
  GROUP BY h, queue_id
)
-- a team may have more than one queue per instance type (a namespace and a team column that disagree): sum them.
-- BIGINT as in Trino (DuckDB widens SUM(BIGINT) to HUGEINT, which its Python client reads several times slower)
SELECT
  date_format(p.h, '%Y-%m-%d %H:%i:%s') AS hour,
  {{cluster}} AS cluster,
  q.instance_type,
  q.team_name AS team,
  CAST(SUM(p.gpu_ms) AS BIGINT) AS gpu_ms,
  CAST(SUM(p.borrowed_gpu_ms) AS BIGINT) AS borrowed_gpu_ms
FROM per_queue AS p
JOIN queues AS q ON p.queue_id = q.queue_id
GROUP BY p.h, q.instance_type, q.team_name
ORDER BY hour, instance_type, team
