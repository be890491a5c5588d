-- hourly_capacity: instance-milliseconds of each instance type in the cluster, per clock hour, and the part on
-- instances that could not run work: SageMaker status other than Running, or `schedulable` false (the platform's
-- collector writes it false for a NotReady, cordoned or HyperPod-unhealthy Kubernetes node).
-- Source: our `node` snapshots (SageMaker ListClusterNodes; collector schema v1, see queries.py). Every row of
-- one snapshot carries the snapshot's timestamp; a snapshot's inventory holds until the cluster's next
-- snapshot, the last one until the end of the month, so an instance that leaves the cluster stops counting
-- at the first snapshot without it.
WITH nodes AS (
  SELECT "timestamp" AS ts, instance_type, instance_id, status, schedulable
  FROM {{node}}
  WHERE cluster = {{cluster}}
    AND ((year = {{year}} AND month = {{month}}) OR (year = {{previous_year}} AND month = {{previous_month}}))
    AND "timestamp" < {{month_end}}
),
-- count each snapshot first (~10^6 rows into one row per snapshot and type), then time the few thousand counts
counts AS (
  SELECT
    ts,
    instance_type,
    COUNT(DISTINCT instance_id) AS instances,
    COUNT(DISTINCT CASE WHEN status <> 'Running' OR NOT schedulable THEN instance_id END) AS unavailable
  FROM nodes
  GROUP BY ts, instance_type
),
snapshot_times AS (
  SELECT ts, COALESCE(LEAD(ts) OVER (ORDER BY ts), {{month_end}}) AS next_ts
  FROM (SELECT DISTINCT ts FROM counts) AS distinct_times
),
inventory AS (
  SELECT
    c.instance_type,
    GREATEST(t.ts, {{month_start}}) AS s,
    LEAST(t.next_ts, {{month_end}}) AS e,
    c.instances,
    c.unavailable
  FROM counts AS c
  JOIN snapshot_times AS t ON c.ts = t.ts
  WHERE t.next_ts > {{month_start}}
),
hourly AS (
  SELECT
    instance_type,
    instances,
    unavailable,
    h,
    date_diff('millisecond', GREATEST(s, h), LEAST(e, h + INTERVAL '1' HOUR)) AS overlap_ms
  FROM inventory
  -- every hour the period touches, to the hour of its end (a period ending on the hour adds an empty hour, dropped
  -- below): a period ending at 01:00:00.500 holds its last half second in the 01:00 hour
  CROSS JOIN UNNEST(SEQUENCE(date_trunc('hour', s), date_trunc('hour', e), INTERVAL '1' HOUR)) AS hours (h)
  WHERE e > s
)
SELECT
  date_format(h, '%Y-%m-%d %H:%i:%s') AS hour,
  {{cluster}} AS cluster,
  instance_type,
  CAST(SUM(instances * overlap_ms) AS BIGINT) AS instance_ms,
  CAST(SUM(unavailable * overlap_ms) AS BIGINT) AS unavailable_instance_ms
FROM hourly
WHERE overlap_ms > 0
GROUP BY h, instance_type
ORDER BY hour, instance_type
