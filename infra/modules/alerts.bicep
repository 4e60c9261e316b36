// Alert rules of the scheduler and the action group they notify (deployed by main.bicep when deployAlerts
// is true). What each alert means and what to do when it fires: docs/deploy.md, section "Alerts".
//
// Every rule is an Azure Monitor log search alert over the app's OpenTelemetry metrics, which the Azure
// Monitor exporter (azure-monitor-opentelemetry-exporter) writes to Application Insights, table
// customMetrics: one row per instrument, attribute set and instance per export interval (60 s by default).
// Counters and histograms are exported as deltas: a counter row's `value` is the increase during the
// interval, and an interval without increase has no row. A histogram row has `value` (the sum),
// `valueCount`, `valueMin` and `valueMax` of the interval and no buckets, so a percentile can only be
// bounded (see the lateness rule). A gauge row has its last value. The attributes are in customDimensions.
//
// What Azure measures by itself is no substitute here: Storage's QueueMessageCount metric is one number
// for all queues of the account (no per-queue dimension, refreshed about hourly), so it cannot tell
// whether `<execution queue>-poison` holds messages; the app's gauge, sampled by the dispatch tick, can.
// The app reads the poison queues in the account they are in (with splitStorage the execution queues'
// own account, setting SchedulerExecutionStorage__queueServiceUri), so no rule names a storage account.

@description('Azure region of the alert rules (that of Application Insights).')
param location string

@description('Tags applied to every resource.')
param tags object

@description('Suffix of the resource names (the deployment\'s resource token).')
param nameSuffix string

@description('Resource id of the Application Insights component the rules query.')
param appInsightsId string

@description('E-mail address the action group notifies (a distribution list for several people). Empty: no e-mail; the alerts still fire and show under Azure Monitor > Alerts.')
param alertEmailAddress string = ''

@description('Failure-rate alert: percentage of failed attempts (of succeeded + failed) over 15 minutes above which it fires.')
@minValue(1)
@maxValue(100)
param failureRatePercent int = 10

@description('Failure-rate alert: fewest finished attempts in the 15 minutes for the rate to count (no alert on 1 failure of 1).')
@minValue(1)
param failureRateMinimumAttempts int = 10

@description('Lateness alert: seconds that the 99th percentile of lateness (due time to call start) must exceed.')
@minValue(1)
param latenessP99Seconds int = 10

@description('Dispatch-tick alert: minutes without a dispatch tick after which it fires (at most 9: the rule reads a 10-minute window).')
@minValue(2)
@maxValue(9)
param tickMissingMinutes int = 3

// Metric names of the app (OpenTelemetry instruments; see docs/deploy.md "Alerts").
var attemptsMetric = 'scheduler.attempts'
var latenessMetric = 'scheduler.lateness'
var ticksMetric = 'scheduler.dispatch.ticks'
var poisonMetric = 'scheduler.poison_queue.length'

// Poison messages present: the newest sample of every instance and attribute set, then the largest.
var poisonQuery = '''
customMetrics
| where name == "scheduler.poison_queue.length"
| summarize arg_max(timestamp, value) by cloud_RoleInstance, Series = tostring(customDimensions)
| summarize PoisonMessages = max(value)
'''

// Failure rate: failed / (succeeded + failed) attempts in the window; other outcomes (stale, skipped...)
// are not executions. No row (so no alert) below the minimum number of attempts.
var failureRateQueryBody = '''
customMetrics
| where name == "scheduler.attempts"
| extend Outcome = tostring(customDimensions.outcome)
| summarize Failed = sumif(value, Outcome == "failed"), Finished = sumif(value, Outcome in ("succeeded", "failed"))
| where Finished >= minAttempts
| extend FailureRatePercent = 100.0 * Failed / Finished
'''
var failureRateQuery = 'let minAttempts = ${failureRateMinimumAttempts};\n${failureRateQueryBody}'

// Lateness p99: customMetrics has no histogram buckets, only count, sum, min and max per export interval.
// Giving each attempt of an interval the interval's minimum is a distribution that every true one
// dominates, so its weighted 99th percentile is a lower bound of the true p99: the alert fires only when
// the p99 is certainly above the threshold. The bound is exact when an interval holds one attempt (per
// instance and attribute set); a single late attempt among many in the same minute does not fire it.
var latenessQuery = '''
customMetrics
| where name == "scheduler.lateness" and valueCount > 0
| summarize LatenessP99LowerBoundSeconds = percentilew(valueMin, valueCount, 99), Attempts = sum(valueCount)
'''

// Dispatch tick missing: minutes since the newest tick row (a counter row exists only for an interval
// with ticks). No tick in the whole window gives a huge number, so the rule fires then too.
var tickMissingQuery = '''
customMetrics
| where name == "scheduler.dispatch.ticks" and value > 0
| summarize LastTick = max(timestamp)
| extend MinutesSinceLastTick = coalesce((now() - LastTick) / 1m, 1000000.0)
'''

resource actionGroup 'Microsoft.Insights/actionGroups@2023-01-01' = {
  name: 'ag-scheduler-${nameSuffix}'
  location: 'Global'
  tags: tags
  properties: {
    groupShortName: 'scheduler'
    enabled: true
    emailReceivers: empty(alertEmailAddress) ? [] : [
      {
        name: 'scheduler-operator'
        emailAddress: alertEmailAddress
        useCommonAlertSchema: true
      }
    ]
  }
}

resource poisonAlert 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = {
  name: 'alert-scheduler-poison-${nameSuffix}'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Scheduler: poison messages present'
    description: 'The poison queue of the execution queue holds messages (metric ${poisonMetric}): executions failed maxDequeueCount times and will not run. See docs/deploy.md, Alerts.'
    severity: 2
    enabled: true
    scopes: [
      appInsightsId
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: poisonQuery
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'PoisonMessages'
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: [
        actionGroup.id
      ]
    }
  }
}

resource failureRateAlert 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = {
  name: 'alert-scheduler-failure-rate-${nameSuffix}'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Scheduler: failure rate high'
    description: 'More than ${failureRatePercent}% of the attempts of the last 15 minutes failed (metric ${attemptsMetric}, attribute outcome). See docs/deploy.md, Alerts.'
    severity: 2
    enabled: true
    scopes: [
      appInsightsId
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: failureRateQuery
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'FailureRatePercent'
          operator: 'GreaterThan'
          threshold: failureRatePercent
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: [
        actionGroup.id
      ]
    }
  }
}

resource tickMissingAlert 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = {
  name: 'alert-scheduler-tick-missing-${nameSuffix}'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Scheduler: dispatch tick missing'
    description: 'No dispatch tick for more than ${tickMissingMinutes} minutes (metric ${ticksMetric}): no job is being dispatched. See docs/deploy.md, Alerts.'
    severity: 1
    enabled: true
    scopes: [
      appInsightsId
    ]
    evaluationFrequency: 'PT1M'
    windowSize: 'PT10M'
    criteria: {
      allOf: [
        {
          query: tickMissingQuery
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'MinutesSinceLastTick'
          operator: 'GreaterThan'
          threshold: tickMissingMinutes
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: [
        actionGroup.id
      ]
    }
  }
}

resource latenessAlert 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = {
  name: 'alert-scheduler-lateness-${nameSuffix}'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Scheduler: lateness p99 high'
    description: 'The 99th percentile of lateness (due time to call start, metric ${latenessMetric}) over 15 minutes is above ${latenessP99Seconds} s (a lower bound: customMetrics has no histogram buckets). See docs/deploy.md, Alerts.'
    severity: 3
    enabled: true
    scopes: [
      appInsightsId
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: latenessQuery
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'LatenessP99LowerBoundSeconds'
          operator: 'GreaterThan'
          threshold: latenessP99Seconds
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: [
        actionGroup.id
      ]
    }
  }
}

output actionGroupId string = actionGroup.id
output alertRuleNames array = [
  poisonAlert.name
  failureRateAlert.name
  tickMissingAlert.name
  latenessAlert.name
]
