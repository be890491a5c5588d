-- collection_gaps: every stretch of the month in which a collector wrote nothing for longer than its threshold.
-- Sources: our `node` snapshots (the 5-minute node inventory) and the usage-report operator's `heartdub`
-- heartbeat (the operator writes its `clusterqueue` snapshots only when a queue changes, so their own silence
-- proves nothing; see queries.py). The month's start and end stand in for records, so a collector that wrote
-- nothing all month is one gap from the start to the end. Inside a gap the last snapshot holds (hourly_usage,
-- hourly_capacity): this query only finds the gaps, the report lists them. Our `partition_usage` snapshots (the
-- eviction collector's, every 5 minutes) are checked only on a cluster that wrote any this month or the month
-- before: a cluster without GPU partitions writes none.
WITH partition_runs AS (
  SELECT "timestamp" AS ts, year, month
  FROM {{partition_usage}}
  WHERE cluster = {{cluster}}
    AND ((year = {{year}} AND month = {{month}}) OR (year = {{previous_year}} AND month = {{previous_month}}))
),
records AS (
  SELECT 'node' AS table_name, "timestamp" AS ts
  FROM {{node}}
  WHERE cluster = {{cluster}}
    AND year = {{year}} AND month = {{month}}
    AND "timestamp" >= {{month_start}} AND "timestamp" < {{month_end}}
  UNION ALL
  SELECT 'heartdub' AS table_name, "timestamp" AS ts
  FROM {{heartdub}}
  WHERE cluster = {{cluster}}
    AND year = {{year}} AND month = {{month}}
    AND "timestamp" >= {{month_start}} AND "timestamp" < {{month_end}}
  UNION ALL
  SELECT 'partition_usage' AS table_name, ts
  FROM partition_runs
  WHERE year = {{year}} AND month = {{month}}
    AND ts >= {{month_start}} AND ts < {{month_end}}
  UNION ALL
  SELECT 'partition_usage' AS table_name, fence AS ts
  FROM (VALUES ({{month_start}}), ({{month_end}})) AS partition_fences (fence)
  WHERE EXISTS (SELECT 1 FROM partition_runs)
  UNION ALL
  SELECT table_name, ts
  FROM (
    VALUES
      ('node', {{month_start}}),
      ('node', {{month_end}}),
      ('heartdub', {{month_start}}),
      ('heartdub', {{month_end}})
  ) AS fences (table_name, ts)
),
marks AS (
  SELECT DISTINCT table_name, ts FROM records
),
spans AS (
  SELECT table_name, ts AS gap_start, LEAD(ts) OVER (PARTITION BY table_name ORDER BY ts) AS gap_end
  FROM marks
)
SELECT
  table_name,
  date_format(gap_start, '%Y-%m-%d %H:%i:%s.%f') AS gap_start,
  date_format(gap_end, '%Y-%m-%d %H:%i:%s.%f') AS gap_end
FROM spans
WHERE gap_end IS NOT NULL
  AND date_diff('millisecond', gap_start, gap_end) > 1000 * CASE table_name
    WHEN 'node' THEN {{node_gap_seconds}}
    WHEN 'partition_usage' THEN {{partition_usage_gap_seconds}}
    ELSE {{heartdub_gap_seconds}}
  END
ORDER BY table_name, gap_start
