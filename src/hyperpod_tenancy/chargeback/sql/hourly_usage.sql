-- hourly_usage: GPU-milliseconds each team's admitted workloads held, per clock hour and instance type.
-- Source: the usage-report operator's raw `clusterqueue` snapshots (one row per ClusterQueue, instance type
-- and snapshot; collector schema v1, see queries.py). As the operator's own CRESCENDO_SUMMARY does: keep the
-- latest resource_version per timestamp, and hold each snapshot's gpu_total / gpu_borrowed until the next
-- snapshot of the same queue and instance type (LEAD). The last snapshot holds until the end of the month;
-- the state at the start of the month is the newest snapshot of the previous month's partitions.
WITH snapshots AS (
  SELECT
    instance_type,
    "timestamp" AS ts,
    CASE WHEN namespace LIKE 'hyperpod-ns-%' THEN substr(namespace, 13) ELSE team END AS team_name,
    gpu_total,
    gpu_borrowed,
    LEAD("timestamp") OVER (
      PARTITION BY instance_type, namespace, team ORDER BY "timestamp", CAST(resource_version AS BIGINT)
    ) AS next_ts
  FROM {{clusterqueue}}
  WHERE cluster = {{cluster}}
    AND ((year = {{year}} AND month = {{month}}) OR (year = {{previous_year}} AND month = {{previous_month}}))
    AND "timestamp" < {{month_end}}
),
-- ordered by time then resource_version, a row followed by a row of the same timestamp is an older version of
-- that snapshot: drop it; the latest version holds until the next timestamp (or the end of the month)
periods AS (
  SELECT instance_type, team_name, gpu_total, gpu_borrowed, ts AS period_start, COALESCE(next_ts, {{month_end}}) AS period_end
  FROM snapshots
  WHERE next_ts IS NULL OR next_ts > ts
),
clipped AS (
  SELECT
    instance_type,
    team_name,
    CAST(gpu_total AS BIGINT) AS gpus,
    CAST(gpu_borrowed AS BIGINT) AS borrowed_gpus,
    GREATEST(period_start, {{month_start}}) AS s,
    LEAST(period_end, {{month_end}}) AS e
  FROM periods
  WHERE gpu_total > 0 AND period_end > {{month_start}} AND period_end > period_start
),
-- most periods (snapshots minutes apart) lie within one clock hour; only the others are split per hour
hourly AS (
  SELECT instance_type, team_name, gpus, borrowed_gpus, date_trunc('hour', s) AS h, date_diff('millisecond', s, e) AS overlap_ms
  FROM clipped
  WHERE e <= date_trunc('hour', s) + INTERVAL '1' HOUR
  UNION ALL
  SELECT
    instance_type,
    team_name,
    gpus,
    borrowed_gpus,
    h,
    date_diff('millisecond', GREATEST(s, h), LEAST(e, h + INTERVAL '1' HOUR)) AS overlap_ms
  FROM clipped
  CROSS JOIN UNNEST(SEQUENCE(date_trunc('hour', s), date_trunc('hour', e), INTERVAL '1' HOUR)) AS hours (h)
  WHERE e > date_trunc('hour', s) + INTERVAL '1' HOUR
)
SELECT
  date_format(h, '%Y-%m-%d %H:%i:%s') AS hour,
  {{cluster}} AS cluster,
  instance_type,
  team_name AS team,
  SUM(gpus * overlap_ms) AS gpu_ms,
  SUM(borrowed_gpus * overlap_ms) AS borrowed_gpu_ms
FROM hourly
WHERE overlap_ms > 0
GROUP BY h, instance_type, team_name
ORDER BY hour, instance_type, team
