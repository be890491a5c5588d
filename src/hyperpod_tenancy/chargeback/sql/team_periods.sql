-- team_periods: the clock hours of the month in which each team's quota exists, as its queue's snapshots show
-- them: from the hour of the queue's first snapshot (the month's first hour when it already existed in the
-- previous month) to the hour of its last snapshot of the month. A team's guarantee is billed in those hours
-- only; outside them its capacity is the idle owner's. A queue with no snapshot in the month has no period.
-- Sources: the usage-report operator's raw `clusterqueue` snapshots (collector schema v1, see queries.py) and our
-- `partition_usage` snapshots (every 5 minutes, one row per team queue whose quota covers GPU partitions, held or
-- not); the team is the namespace without its `hyperpod-ns-` prefix, as in hourly_usage.
SELECT
  team,
  date_format(GREATEST(date_trunc('hour', MIN(ts)), {{month_start}}), '%Y-%m-%d %H:%i:%s') AS first_hour,
  date_format(date_trunc('hour', MAX(ts)), '%Y-%m-%d %H:%i:%s') AS last_hour
FROM (
  SELECT
    CASE WHEN namespace LIKE 'hyperpod-ns-%' THEN substr(namespace, 13) ELSE team END AS team,
    "timestamp" AS ts
  FROM {{clusterqueue}}
  WHERE cluster = {{cluster}}
    AND ((year = {{year}} AND month = {{month}}) OR (year = {{previous_year}} AND month = {{previous_month}}))
    AND "timestamp" < {{month_end}}
  UNION ALL
  SELECT
    CASE WHEN namespace LIKE 'hyperpod-ns-%' THEN substr(namespace, 13) ELSE namespace END AS team,
    "timestamp" AS ts
  FROM {{partition_usage}}
  WHERE cluster = {{cluster}}
    AND ((year = {{year}} AND month = {{month}}) OR (year = {{previous_year}} AND month = {{previous_month}}))
    AND "timestamp" < {{month_end}}
) AS snapshots
GROUP BY team
HAVING MAX(ts) >= {{month_start}}
ORDER BY team
