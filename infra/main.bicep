// Azure Scheduler successor: everything one deployment needs, in its own resource group.
//   azd up                                    (uses main.parameters.json)
//   az deployment sub create -l <region> -f infra/main.bicep -p environmentName=<name> location=<region>
// See docs/deploy.md. Modules: monitoring, storage (tables and queues), key vault (API key hashes),
// function app (plan, site, optional App Service Authentication), roles, app settings, optional
// Service Bus namespace, alert rules (on by default) with their action group, and with splitStorage two
// more storage accounts: one for the history tables, one for the execution queues.
targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('Name of the environment (azd: AZURE_ENV_NAME); names the resource group and seeds unique names.')
param environmentName string

@minLength(1)
@description('Azure region of every resource.')
param location string

@description('Resource group to create or reuse. Empty: rg-<environmentName>.')
param resourceGroupName string = ''

@description('Hosting plan: FlexConsumption (FC1, default) or ElasticPremium (EP1-EP3).')
@allowed([
  'FlexConsumption'
  'ElasticPremium'
])
param hostingPlan string = 'FlexConsumption'

@description('Elastic Premium SKU (hostingPlan ElasticPremium only).')
@allowed([
  'EP1'
  'EP2'
  'EP3'
])
param elasticPremiumSku string = 'EP1'

@description('Python version of the app. Default 3.12, as in Microsoft\'s Flex Consumption quickstart; the app supports 3.11 to 3.13 (pyproject.toml), as far as the chosen plan offers the version in the region.')
@allowed([
  '3.11'
  '3.12'
  '3.13'
])
param pythonVersion string = '3.12'

@description('PYTHON_THREADPOOL_THREAD_COUNT on Flex Consumption, where each queue function has instances of its own: 40 = host.json queues batchSize (16) + newBatchThreshold (24), the messages the host hands one instance of one queue function at once. On Elastic Premium the count is computed from it and the functions every instance runs (elasticPremiumThreadCount; docs/deploy.md section 11).')
@minValue(1)
@maxValue(1024)
param pythonThreadpoolThreadCount int = 40

@description('Flex Consumption: always-ready instances of each of dispatch_tick, scan_shard and the executionQueueCount execution functions (execute_occurrence, execute_occurrence_1...). 1 (default) keeps one of each running, so that an execution message is taken within a second of its due time (the scale controller counts only visible messages, and every execution message is invisible until it is due); 0 lets them scale to zero. Billed as a baseline whether they run or not (docs/deploy.md "What each plan keeps").')
@minValue(0)
@maxValue(20)
param alwaysReadyInstanceCount int = 1

@description('Flex Consumption: always-ready instances of the http group (management API, dashboard, health, OpenAPI document). 0 (default): a request after an idle spell may wait for an instance to start.')
@minValue(0)
@maxValue(20)
param alwaysReadyHttpInstanceCount int = 0

@description('Elastic Premium: minimum (always-ready) instances of the plan, at least 1 (every instance runs every function).')
@minValue(1)
@maxValue(20)
param elasticPremiumMinimumInstances int = 1

@description('Deploy the alert rules (poison messages, failure rate, dispatch tick missing, lateness p99) and their action group.')
param deployAlerts bool = true

@description('E-mail address the alerts are sent to (a distribution list for several people). Empty: alerts fire and show in Azure Monitor, without e-mail.')
param alertEmailAddress string = ''

@description('Failure-rate alert: percentage of failed attempts in 15 minutes above which it fires.')
@minValue(1)
@maxValue(100)
param alertFailureRatePercent int = 10

@description('Failure-rate alert: fewest finished attempts in 15 minutes for the rate to count.')
@minValue(1)
param alertFailureRateMinimumAttempts int = 10

@description('Lateness alert: seconds the 99th percentile of lateness (due time to call start) must exceed.')
@minValue(1)
param alertLatenessP99Seconds int = 10

@description('Dispatch-tick alert: minutes without a dispatch tick after which it fires (at most 9: the rule reads a 10-minute window).')
@minValue(2)
@maxValue(9)
param alertTickMissingMinutes int = 3

@description('Flex Consumption: maximum number of instances.')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int = 100

@description('Replication of the storage account that holds the scheduler state (geo-redundant by default).')
@allowed([
  'Standard_LRS'
  'Standard_ZRS'
  'Standard_GRS'
  'Standard_GZRS'
  'Standard_RAGRS'
  'Standard_RAGZRS'
])
param storageSku string = 'Standard_GRS'

@description('The history tables and the execution queues each in a storage account of their own, for deployments beyond one account\'s 20,000 requests/s; see docs/capacity.md. Set it before the first job fires: rows and messages already written stay in the account they were written to (docs/deploy.md section 13).')
param splitStorage bool = false

@description('SCHEDULER_API_KEYS entries (hashes from python -m local_host keygen). Empty: leave the Key Vault secret as it is.')
@secure()
param apiKeyHashes string = ''

@description('Object id of the deploying user or group (azd: AZURE_PRINCIPAL_ID), given Key Vault Secrets Officer to manage the API key hashes. Empty: none.')
param principalId string = ''

@description('Principal type of principalId.')
@allowed([
  'User'
  'Group'
  'ServicePrincipal'
])
param principalType string = 'User'

@description('Put App Service Authentication (Microsoft Entra ID) in front of the API, in addition to API keys.')
param enableAppServiceAuth bool = false

@description('Client id of the Entra app registration of the API (needed when enableAppServiceAuth is true).')
param authClientId string = ''

@description('Accepted token audiences. Empty: api://<authClientId>.')
param authAllowedAudiences array = []

@description('Deploy a Service Bus namespace (local auth off) that the app may send to with its identity.')
param deployServiceBus bool = false

@description('Service Bus tier, when deployServiceBus is true.')
@allowed([
  'Basic'
  'Standard'
  'Premium'
])
param serviceBusSku string = 'Standard'

// ---- Scheduler settings (defaults are those of scheduler_core/settings.py) ----

@description('SCHEDULER_TABLE_PREFIX: prefix of every table name (letters and digits).')
param tablePrefix string = ''

@description('SCHEDULER_SCAN_QUEUE: queue of due-index scan requests.')
param scanQueueName string = 'scheduler-scan'

@description('SCHEDULER_EXECUTION_QUEUE: queue of execution attempts.')
param executionQueueName string = 'scheduler-executions'

@description('SCHEDULER_EXECUTION_QUEUE_COUNT: execution queues K, each with a function of its own (execute_occurrence, execute_occurrence_1...) that Flex Consumption scales on its own. Queue 0 is executionQueueName, queue i executionQueueName-i (docs/capacity.md). Raise it freely; lowering it strands what waits in the queues that go away (docs/deploy.md section 12).')
@minValue(1)
@maxValue(32)
param executionQueueCount int = 1

@description('SCHEDULER_CLEANUP_QUEUE: queue of the daily cleanup\'s work (one message per subscription, then per collection), consumed by the function cleanup_collections; its own queue, so that the cleanup never delays the dispatch scans.')
param cleanupQueueName string = 'scheduler-cleanup'

@description('SCHEDULER_DISPATCH_SCHEDULE: NCRONTAB of the dispatch timer.')
param dispatchSchedule string = '45 * * * * *'

@description('SCHEDULER_CLEANUP_SCHEDULE: NCRONTAB of the daily cleanup timer.')
param cleanupSchedule string = '0 30 3 * * *'

@description('SCHEDULER_DUE_SHARDS: due-index shards, one scan each per minute (a live deployment may change it: no indexed job is lost; see docs/capacity.md).')
@minValue(1)
@maxValue(1000)
param dueShards int = 16

@description('SCHEDULER_LOOKAHEAD_SECONDS: how far ahead a scan enqueues executions.')
@minValue(5)
@maxValue(300)
param lookaheadSeconds int = 75

@description('SCHEDULER_HTTP_TIMEOUT_SECONDS: timeout of an HTTP action.')
@minValue(1)
@maxValue(600)
param httpTimeoutSeconds int = 60

@description('SCHEDULER_ALLOW_METADATA_ENDPOINTS: let actions call link-local / cloud metadata addresses.')
param allowMetadataEndpoints bool = false

@description('SCHEDULER_STORAGE_QUEUE_ENDPOINT: DNS suffix (or URL template with {account}) of Storage queue actions.')
param storageQueueEndpoint string = 'core.windows.net'

@description('SCHEDULER_STORAGE_QUEUE_MESSAGE_FORMAT: envelope (Azure Scheduler XML, base64), base64 or text.')
@allowed([
  'envelope'
  'base64'
  'text'
])
param storageQueueMessageFormat string = 'envelope'

@description('SchedulerHistoryStream__queueServiceUri: the queue endpoint (https://<account>.queue.core.windows.net) of a storage account of yours that every history record is streamed to, with the app\'s managed identity; grant it Storage Queue Data Message Sender on the queue. Empty: no stream.')
param historyStreamQueueServiceUri string = ''

@description('SCHEDULER_HISTORY_STREAM_QUEUE: the history stream\'s queue in that account (it must exist).')
param historyStreamQueueName string = 'scheduler-history'

@description('SchedulerWitness__blobServiceUri: the blob endpoint (https://<account>.blob.core.windows.net) of the account in a third region that holds the regions\' witness (docs/regions.md), reached with the app\'s managed identity; grant it Storage Blob Data Contributor on the witness\'s container. Empty: no witness, the app is active alone.')
param witnessBlobServiceUri string = ''

@description('SCHEDULER_REGION_NAME: this deployment\'s region as the witness names it (required with a witness).')
param regionName string = ''

@description('SCHEDULER_WITNESS_BLOB: the witness\'s <container>/<blob name> in that account.')
param witnessBlob string = 'scheduler-witness/active'

@description('SCHEDULER_REGION_PRIMARY: the preferred region\'s name, the same in both regions (empty: no automatic hand-back).')
param primaryRegion string = ''

@description('SCHEDULER_REGION_HANDBACK_SECONDS: how long the primary region\'s copy must be current before the other region hands the lease back to it (0: only by an operator).')
@minValue(0)
@maxValue(86400)
param handbackSeconds int = 600

@description('SchedulerPeer__tableServiceUri: the table endpoint (https://<account>.table.core.windows.net) of the other region\'s storage account, which this region copies job collections and jobs from while it is the standby (docs/regions.md); grant the app\'s identity Storage Table Data Contributor there. Empty: nothing is copied. Only with a witness.')
param peerTableServiceUri string = ''

@description('SCHEDULER_SERVICE_BUS_ENDPOINT: DNS suffix (or URL template with {namespace}) of Service Bus actions.')
param serviceBusEndpoint string = 'servicebus.windows.net'

@description('SCHEDULER_SERVICE_BUS_IDLE_SECONDS: close a reused Service Bus sender after this long unused.')
@minValue(1)
@maxValue(86400)
param serviceBusIdleSeconds int = 300

@description('SCHEDULER_IDENTITY_ALLOWED_HOSTS: more hosts or DNS suffixes (besides the two endpoints) the app identity may be presented to.')
param identityAllowedHosts string = ''

@description('SCHEDULER_ENTRA_AUTHORITY_HOST: Entra ID authority of ActiveDirectoryOAuth HTTP authentication and of the API\'s own token validation.')
param entraAuthorityHost string = 'https://login.microsoftonline.com'

@description('SCHEDULER_ENTRA_TENANT_ID: tenant whose Entra ID access tokens the management API accepts; empty = API keys only.')
param entraTenantId string = ''

@description('SCHEDULER_ENTRA_AUDIENCES: accepted token audiences, separated by ";" (the API app registration\'s Application ID URI and client id).')
param entraAudiences string = ''

@description('SCHEDULER_ROLE_ASSIGNMENTS: roles of Entra ID principals per subscription, "<reader|contributor>:<oid|group|approle>:<value>[@subs]" separated by ";".')
param roleAssignments string = ''

var resourceToken = toLower(uniqueString(subscription().id, environmentName, location))
var tags = {
  'azd-env-name': environmentName
}
var rgName = empty(resourceGroupName) ? 'rg-${environmentName}' : resourceGroupName
var storageAccountName = 'st${resourceToken}'
// splitStorage: the accounts of the history tables and of the execution queues.
var historyStorageAccountName = 'sthist${resourceToken}'
var executionStorageAccountName = 'stexec${resourceToken}'
var keyVaultName = 'kv-${resourceToken}'
var functionAppName = 'func-${resourceToken}'
var apiKeysSecretName = 'scheduler-api-keys'
var deploymentContainerName = 'app-package-${resourceToken}'
var isElasticPremium = hostingPlan == 'ElasticPremium'
// Elastic Premium runs from this blob (WEBSITE_RUN_FROM_PACKAGE = its URL, read with the app's identity):
// Microsoft's way to run an Elastic Premium app without an Azure Files content share, which would need a
// storage key (shared keys are disabled). Flex Consumption uses the same container for its own packages.
var elasticPremiumPackageBlobName = 'elastic-premium/scheduler.zip'

// Tables of scheduler_core/storage/names.py TABLES (the storage modules add tablePrefix): the history
// tables (names.py HISTORY_TABLES: HISTORY_TABLE, CLAIMS_TABLE) are in the history account with
// splitStorage, the others always in the main account.
var historyTableNames = [
  'JobHistory'
  'Executions'
]
var otherTableNames = [
  'JobCollections'
  'Jobs'
  'DueIndex'
  'FlowControl'
  'Regions'
]
var tableNames = concat(otherTableNames, historyTableNames)
// The tables of the main account: all of them, or with splitStorage all but the history tables.
var mainTableNames = splitStorage ? otherTableNames : tableNames

// The execution queues (scheduler_core/settings.py execution_queue_name): queue 0 keeps the one name a
// deployment had before SCHEDULER_EXECUTION_QUEUE_COUNT, queue i is '<name>-i'.
var executionQueues = [for i in range(0, executionQueueCount): (i == 0) ? executionQueueName : '${executionQueueName}-${i}']
var executionPoisonQueues = [for queue in executionQueues: '${queue}-poison']
// In the execution account with splitStorage (names.py execution_queue_names).
var executionQueueNames = concat(executionQueues, executionPoisonQueues)
var otherQueueNames = [
  scanQueueName
  '${scanQueueName}-poison'
  cleanupQueueName
  '${cleanupQueueName}-poison'
]

// Queues: scan, execution and cleanup, and the -poison queues the host moves failed messages to.
var queueNames = concat(otherQueueNames, executionQueueNames)
// The queues of the main account: all of them, or with splitStorage all but the execution queues.
var mainQueueNames = splitStorage ? otherQueueNames : queueNames

// ---- What the platform keeps (docs/deploy.md "What each plan keeps"; tests/infra/test_platform_settings.py) ----

// The execution functions as function_app.py declares them (scheduler_core/triggers.py
// execution_function_name): execute_occurrence on queue 0, execute_occurrence_i on queue i.
var executionFunctionNames = [for i in range(0, executionQueueCount): (i == 0) ? 'execute_occurrence' : 'execute_occurrence_${i}']
// Flex Consumption scales each of these on instances of its own and to zero when idle. Its scale metric
// for a queue counts visible messages only, and every execution message is invisible until its due second,
// so an idle execution function would wake only after its messages became due. Always-ready instances keep
// one of each polling (maxPollingInterval 1 s), the dispatch tick's timer and lock held, and the scans warm.
// A function that is not in a group (http, blob, durable) is named function:<name>.
var alwaysReadyFunctionNames = concat([
  'dispatch_tick'
  'scan_shard'
], executionFunctionNames)
var schedulerAlwaysReady = [for name in alwaysReadyFunctionNames: {
  name: 'function:${name}'
  instanceCount: alwaysReadyInstanceCount
}]
// (Comparisons and arithmetic are parenthesized: pycep-parser, which checkov uses, knows no operator precedence.)
var flexAlwaysReady = concat((alwaysReadyInstanceCount > 0) ? schedulerAlwaysReady : [], (alwaysReadyHttpInstanceCount > 0) ? [
  {
    name: 'http'
    instanceCount: alwaysReadyHttpInstanceCount
  }
] : [])

// host.json extensions.http.maxConcurrentRequests, also the http group's perInstanceConcurrency on Flex
// Consumption (Python's default there is 1 request per instance; the API's requests wait on storage).
var httpMaxConcurrentRequests = 16
// scheduler_core/api/handler.py MAX_BODY_BYTES: the management API answers a larger body with its own 413.
var managementApiMaxBodyBytes = 65536
// FUNCTIONS_REQUEST_BODY_SIZE_LIMIT: twice the API's limit, so that a body somewhat over it still reaches
// the API and gets its ARM 413 error, while the host refuses anything larger itself before reading it
// whole (unset: 100 MB per request, read into memory before Python sees it).
var requestBodySizeLimit = 2 * managementApiMaxBodyBytes

// PYTHON_THREADPOOL_THREAD_COUNT. Flex Consumption: each queue function runs on instances of its own, so
// pythonThreadpoolThreadCount (one function's batchSize + newBatchThreshold) serves an instance. Elastic
// Premium: every instance runs every function in one worker process (FUNCTIONS_WORKER_PROCESS_COUNT 1), whose
// pool must hold what the host hands it at once: batchSize + newBatchThreshold messages for each queue
// function (scan_shard, cleanup_collections and the K execution functions), one invocation of each timer
// (dispatch_tick, cleanup) and maxConcurrentRequests HTTP requests; at most 1024, the most the app accepts.
var queueFunctionCount = 2 + executionQueueCount
var timerFunctionCount = 2
var elasticPremiumThreadCount = min(1024, (queueFunctionCount * pythonThreadpoolThreadCount) + timerFunctionCount + httpMaxConcurrentRequests)
var workerThreadCount = isElasticPremium ? elasticPremiumThreadCount : pythonThreadpoolThreadCount

// Every setting of scheduler_core/settings.py SETTINGS. AzureWebJobsStorage (a connection string with
// a key) is replaced by the identity-based AzureWebJobsStorage__accountName, and likewise
// SchedulerHistoryStorage and SchedulerExecutionStorage by their identity-based __tableServiceUri and
// __queueServiceUri (the accounts' endpoints with splitStorage, else empty: everything in the main
// account), and SchedulerHistoryStream, SchedulerWitness and SchedulerPeer by their __queueServiceUri, __blobServiceUri and
// __tableServiceUri (parameters); the connection strings are left out, not set empty: the Functions host would read an empty
// SchedulerExecutionStorage as a connection string. FUNCTIONS_WORKER_RUNTIME is set by appsettings.bicep
// (Elastic Premium) or functionAppConfig.runtime (Flex Consumption).
var schedulerSettings = {
  AzureWebJobsStorage__accountName: storageAccountName
  SchedulerHistoryStorage__tableServiceUri: splitStorage ? historyStorage.outputs.tableEndpoint : ''
  SchedulerExecutionStorage__queueServiceUri: splitStorage ? executionStorage.outputs.queueEndpoint : ''
  SchedulerHistoryStream__queueServiceUri: historyStreamQueueServiceUri
  SCHEDULER_HISTORY_STREAM_QUEUE: historyStreamQueueName
  SchedulerWitness__blobServiceUri: witnessBlobServiceUri
  SCHEDULER_REGION_NAME: regionName
  SCHEDULER_WITNESS_BLOB: witnessBlob
  SchedulerPeer__tableServiceUri: peerTableServiceUri
  SCHEDULER_REGION_PRIMARY: primaryRegion
  SCHEDULER_REGION_HANDBACK_SECONDS: string(handbackSeconds)
  SCHEDULER_API_KEYS: '@Microsoft.KeyVault(VaultName=${keyVaultName};SecretName=${apiKeysSecretName})'
  SCHEDULER_TABLE_PREFIX: tablePrefix
  SCHEDULER_SCAN_QUEUE: scanQueueName
  SCHEDULER_EXECUTION_QUEUE: executionQueueName
  SCHEDULER_EXECUTION_QUEUE_COUNT: string(executionQueueCount)
  SCHEDULER_CLEANUP_QUEUE: cleanupQueueName
  SCHEDULER_DISPATCH_SCHEDULE: dispatchSchedule
  SCHEDULER_CLEANUP_SCHEDULE: cleanupSchedule
  SCHEDULER_DUE_SHARDS: string(dueShards)
  SCHEDULER_LOOKAHEAD_SECONDS: string(lookaheadSeconds)
  SCHEDULER_HTTP_TIMEOUT_SECONDS: string(httpTimeoutSeconds)
  SCHEDULER_ALLOW_METADATA_ENDPOINTS: string(allowMetadataEndpoints)
  SCHEDULER_STORAGE_QUEUE_ENDPOINT: storageQueueEndpoint
  SCHEDULER_STORAGE_QUEUE_MESSAGE_FORMAT: storageQueueMessageFormat
  SCHEDULER_SERVICE_BUS_ENDPOINT: serviceBusEndpoint
  SCHEDULER_SERVICE_BUS_IDLE_SECONDS: string(serviceBusIdleSeconds)
  SCHEDULER_IDENTITY_ALLOWED_HOSTS: identityAllowedHosts
  SCHEDULER_ENTRA_AUTHORITY_HOST: entraAuthorityHost
  SCHEDULER_ENTRA_TENANT_ID: entraTenantId
  SCHEDULER_ENTRA_AUDIENCES: entraAudiences
  SCHEDULER_ROLE_ASSIGNMENTS: roleAssignments
}

resource rg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: rgName
  location: location
  tags: tags
}

module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  scope: rg
  params: {
    location: location
    tags: tags
    logAnalyticsName: 'log-${resourceToken}'
    appInsightsName: 'appi-${resourceToken}'
  }
}

module storage 'modules/storage.bicep' = {
  name: 'storage'
  scope: rg
  params: {
    location: location
    tags: tags
    name: storageAccountName
    storageSkuName: storageSku
    tablePrefix: tablePrefix
    tableNames: mainTableNames
    queueNames: mainQueueNames
    deploymentContainerName: deploymentContainerName
  }
}

// splitStorage: the history tables in an account of their own (same module, same hardening).
module historyStorage 'modules/storage.bicep' = if (splitStorage) {
  name: 'storage-history'
  scope: rg
  params: {
    location: location
    tags: tags
    name: historyStorageAccountName
    storageSkuName: storageSku
    tablePrefix: tablePrefix
    tableNames: historyTableNames
    queueNames: []
  }
}

// splitStorage: the execution queues and their -poison queues in an account of their own.
module executionStorage 'modules/storage.bicep' = if (splitStorage) {
  name: 'storage-execution'
  scope: rg
  params: {
    location: location
    tags: tags
    name: executionStorageAccountName
    storageSkuName: storageSku
    tablePrefix: tablePrefix
    tableNames: []
    queueNames: executionQueueNames
  }
}

module keyVault 'modules/keyvault.bicep' = {
  name: 'keyvault'
  scope: rg
  params: {
    location: location
    tags: tags
    name: keyVaultName
    apiKeysSecretName: apiKeysSecretName
    apiKeyHashes: apiKeyHashes
  }
}

module functionApp 'modules/functionapp.bicep' = {
  name: 'functionapp'
  scope: rg
  params: {
    location: location
    tags: tags
    name: functionAppName
    planName: 'plan-${resourceToken}'
    hostingPlan: hostingPlan
    elasticPremiumSku: elasticPremiumSku
    pythonVersion: pythonVersion
    storageBlobEndpoint: storage.outputs.blobEndpoint
    deploymentContainerName: deploymentContainerName
    maximumInstanceCount: maximumInstanceCount
    alwaysReady: flexAlwaysReady
    httpPerInstanceConcurrency: httpMaxConcurrentRequests
    minimumElasticInstanceCount: elasticPremiumMinimumInstances
    enableAppServiceAuth: enableAppServiceAuth
    authClientId: authClientId
    authAllowedAudiences: authAllowedAudiences
  }
}

module roles 'modules/roles.bicep' = {
  name: 'roles'
  scope: rg
  params: {
    principalId: functionApp.outputs.principalId
    storageAccountName: storage.outputs.name
    historyStorageAccountName: splitStorage ? historyStorage.outputs.name : ''
    executionStorageAccountName: splitStorage ? executionStorage.outputs.name : ''
    keyVaultName: keyVault.outputs.name
    appInsightsName: monitoring.outputs.appInsightsName
    secretsOfficerPrincipalId: principalId
    secretsOfficerPrincipalType: principalType
    deploymentContainerName: deploymentContainerName
    packageUploaderPrincipalId: isElasticPremium ? principalId : ''
    packageUploaderPrincipalType: principalType
  }
}

module serviceBus 'modules/servicebus.bicep' = if (deployServiceBus) {
  name: 'servicebus'
  scope: rg
  params: {
    location: location
    tags: tags
    name: 'sb-${resourceToken}'
    serviceBusSkuName: serviceBusSku
    principalId: functionApp.outputs.principalId
  }
}

module appSettings 'modules/appsettings.bicep' = {
  name: 'appsettings'
  scope: rg
  dependsOn: [
    roles
  ]
  params: {
    functionAppName: functionApp.outputs.name
    hostingPlan: hostingPlan
    schedulerSettings: schedulerSettings
    appInsightsConnectionString: monitoring.outputs.appInsightsConnectionString
    pythonThreadCount: workerThreadCount
    requestBodySizeLimit: requestBodySizeLimit
    elasticPremiumPackageUrl: '${storage.outputs.blobEndpoint}${deploymentContainerName}/${elasticPremiumPackageBlobName}'
  }
}

module alerts 'modules/alerts.bicep' = if (deployAlerts) {
  name: 'alerts'
  scope: rg
  params: {
    location: location
    tags: tags
    nameSuffix: resourceToken
    appInsightsId: monitoring.outputs.appInsightsId
    alertEmailAddress: alertEmailAddress
    failureRatePercent: alertFailureRatePercent
    failureRateMinimumAttempts: alertFailureRateMinimumAttempts
    latenessP99Seconds: alertLatenessP99Seconds
    tickMissingMinutes: alertTickMissingMinutes
  }
}

output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_RESOURCE_GROUP string = rg.name
output SCHEDULER_FUNCTION_APP_NAME string = functionApp.outputs.name
output SCHEDULER_PRINCIPAL_ID string = functionApp.outputs.principalId
output SCHEDULER_ENDPOINT string = 'https://${functionApp.outputs.defaultHostName}'
output SCHEDULER_STORAGE_ACCOUNT string = storage.outputs.name
output SCHEDULER_HISTORY_STORAGE_ACCOUNT string = splitStorage ? historyStorageAccountName : ''
output SCHEDULER_EXECUTION_STORAGE_ACCOUNT string = splitStorage ? executionStorageAccountName : ''
output SCHEDULER_KEY_VAULT_NAME string = keyVault.outputs.name
output SCHEDULER_API_KEYS_SECRET string = apiKeysSecretName
output SCHEDULER_SERVICE_BUS_NAMESPACE string = deployServiceBus ? 'sb-${resourceToken}' : ''
output SCHEDULER_PACKAGE_URL string = isElasticPremium ? '${storage.outputs.blobEndpoint}${deploymentContainerName}/${elasticPremiumPackageBlobName}' : ''
