-- hourly_partitions: compute-slice-milliseconds of the GPU partitions each team's admitted workloads held, per
-- clock hour and instance type. A partition of profile <g>g.<m>gb holds g of a GPU's 7 compute slices; the
-- engine bills slice-milliseconds / 7 as GPU-milliseconds (queries.rows), so a slice a layout leaves unused is
-- capacity no team holds: the idle owner's.
-- Source: our `partition_usage` snapshots (the eviction collector, every 5 minutes: one row per team ClusterQueue,
-- flavor and partition resource its quota covers; collector schema v1, see queries.py). Every row of one run
-- carries the run's timestamp; a run's rows hold until the cluster's next run, the last one until the end of
-- the month, and the state at the start of the month is the newest run of the previous month's partitions.
WITH runs AS (
  SELECT
    "timestamp" AS ts,
    instance_type,
    CASE WHEN namespace LIKE 'hyperpod-ns-%' THEN substr(namespace, 13) ELSE namespace END AS team,
    CAST(slices AS BIGINT) * CAST(total AS BIGINT) AS held_slices,
    CAST(slices AS BIGINT) * CAST(borrowed AS BIGINT) AS borrowed_slices
  FROM {{partition_usage}}
  WHERE cluster = {{cluster}}
    AND ((year = {{year}} AND month = {{month}}) OR (year = {{previous_year}} AND month = {{previous_month}}))
    AND "timestamp" < {{month_end}}
),
run_times AS (
  SELECT ts, COALESCE(LEAD(ts) OVER (ORDER BY ts), {{month_end}}) AS next_ts
  FROM (SELECT DISTINCT ts FROM runs) AS distinct_times
),
held AS (
  SELECT
    r.instance_type,
    r.team,
    GREATEST(t.ts, {{month_start}}) AS s,
    LEAST(t.next_ts, {{month_end}}) AS e,
    SUM(r.held_slices) AS held_slices,
    SUM(r.borrowed_slices) AS borrowed_slices
  FROM runs AS r
  JOIN run_times AS t ON r.ts = t.ts
  WHERE t.next_ts > {{month_start}}
  GROUP BY r.instance_type, r.team, t.ts, t.next_ts
  HAVING SUM(r.held_slices) > 0
),
hourly AS (
  SELECT
    instance_type,
    team,
    held_slices,
    borrowed_slices,
    h,
    date_diff('millisecond', GREATEST(s, h), LEAST(e, h + INTERVAL '1' HOUR)) AS overlap_ms
  FROM held
  -- every hour the period touches, to the hour of its end (as in hourly_capacity)
  CROSS JOIN UNNEST(SEQUENCE(date_trunc('hour', s), date_trunc('hour', e), INTERVAL '1' HOUR)) AS hours (h)
  WHERE e > s
)
SELECT
  date_format(h, '%Y-%m-%d %H:%i:%s') AS hour,
  {{cluster}} AS cluster,
  instance_type,
  team,
  CAST(SUM(held_slices * overlap_ms) AS BIGINT) AS slice_ms,
  CAST(SUM(borrowed_slices * overlap_ms) AS BIGINT) AS borrowed_slice_ms
FROM hourly
WHERE overlap_ms > 0
GROUP BY h, instance_type, team
ORDER BY hour, instance_type, team
