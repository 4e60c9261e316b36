// App settings of the function app, applied after the role assignments so that the identity-based
// storage connection and the Key Vault reference resolve at the app's first start.
// The scheduler's own settings (scheduler_core/settings.py SETTINGS) come from main.bicep; this module
// adds the platform settings, which differ by plan: on Flex Consumption the worker runtime and Python
// version are properties of the site (functionAppConfig.runtime) and the platform rejects the
// FUNCTIONS_WORKER_RUNTIME / FUNCTIONS_EXTENSION_VERSION app settings; on Elastic Premium they are settings.

@description('Function app name.')
param functionAppName string

@description('FlexConsumption or ElasticPremium.')
@allowed([
  'FlexConsumption'
  'ElasticPremium'
])
param hostingPlan string

@description('The scheduler settings (names from scheduler_core/settings.py).')
param schedulerSettings object

@description('Application Insights connection string (not a secret: ingestion needs an Entra token).')
param appInsightsConnectionString string

@description('PYTHON_THREADPOOL_THREAD_COUNT: threads of the Python worker that run sync function invocations (main.bicep sizes it per plan).')
@minValue(1)
@maxValue(1024)
param pythonThreadCount int

@description('FUNCTIONS_REQUEST_BODY_SIZE_LIMIT: largest request body (bytes) the Functions host reads before it refuses the request itself with 413.')
@minValue(1)
param requestBodySizeLimit int

@description('Elastic Premium: URL of the deployment package blob the app runs from (read with its identity).')
param elasticPremiumPackageUrl string

var isFlex = hostingPlan == 'FlexConsumption'

var platformSettings = {
  APPLICATIONINSIGHTS_CONNECTION_STRING: appInsightsConnectionString
  // Local auth is disabled on the component: send telemetry with the managed identity.
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'Authorization=AAD'
  // Set explicitly on both plans: unset, the worker sizes its pool by the instance's CPU count
  // (min(32, cpu + 4) on Python 3.9 and later), which differs by plan and instance size.
  PYTHON_THREADPOOL_THREAD_COUNT: string(pythonThreadCount)
  // Both plans are Linux, where the host reads a whole request body (up to 100 MB unset) before the worker
  // sees it (azure-functions-host HttpRequestBodySizeMiddleware sets Kestrel's MaxRequestBodySize from it).
  // main.bicep sets twice the management API's own limit: docs/deploy.md "What each plan keeps".
  FUNCTIONS_REQUEST_BODY_SIZE_LIMIT: string(requestBodySizeLimit)
}

// Elastic Premium without an Azure Files content share (WEBSITE_CONTENTAZUREFILECONNECTIONSTRING needs a
// storage key, and shared keys are disabled). Microsoft's requirements for that ("Create an app without
// Azure Files", storage-considerations): the package is in a private blob container, its URL is
// WEBSITE_RUN_FROM_PACKAGE, fetched with the app's managed identity, and it is updated by hand (with a
// restart or trigger sync). There is no remote build then: a build writes to the content share, and run
// from package ignores SCM_DO_BUILD_DURING_DEPLOYMENT. The package carries its Linux dependencies in
// .python_packages (docs/deploy.md shows the build).
var elasticPremiumSettings = {
  FUNCTIONS_WORKER_RUNTIME: 'python'
  FUNCTIONS_EXTENSION_VERSION: '~4'
  // One Python worker process per instance (the host's default, set so that nobody raises it unawares): the
  // thread count main.bicep computes is for one process holding everything the host hands the instance, and
  // the app keeps its clients, caches and pacing (the queue peeks, the scan pool) per process.
  FUNCTIONS_WORKER_PROCESS_COUNT: '1'
  WEBSITE_RUN_FROM_PACKAGE: elasticPremiumPackageUrl
  WEBSITE_RUN_FROM_PACKAGE_BLOB_MI_RESOURCE_ID: 'SystemAssigned'
  SCM_DO_BUILD_DURING_DEPLOYMENT: 'false'
  ENABLE_ORYX_BUILD: 'false'
}

resource site 'Microsoft.Web/sites@2024-04-01' existing = {
  name: functionAppName
}

resource appSettings 'Microsoft.Web/sites/config@2024-04-01' = {
  // checkov:skip=CKV_AZURE_13: false positive: checkov applies web-app checks to every Microsoft.Web/sites/config resource; this one holds only app settings, the site itself is configured in functionapp.bicep
  // checkov:skip=CKV_AZURE_63: false positive: checkov applies web-app checks to every Microsoft.Web/sites/config resource; this one holds only app settings, the site itself is configured in functionapp.bicep
  // checkov:skip=CKV_AZURE_65: false positive: checkov applies web-app checks to every Microsoft.Web/sites/config resource; this one holds only app settings, the site itself is configured in functionapp.bicep
  // checkov:skip=CKV_AZURE_66: false positive: checkov applies web-app checks to every Microsoft.Web/sites/config resource; this one holds only app settings, the site itself is configured in functionapp.bicep
  // checkov:skip=CKV_AZURE_80: false positive: checkov applies web-app checks to every Microsoft.Web/sites/config resource; this one holds only app settings, the site itself is configured in functionapp.bicep (and the app is Python, not .NET)
  // checkov:skip=CKV_AZURE_88: false positive: checkov applies web-app checks to every Microsoft.Web/sites/config resource; this one holds only app settings, the site itself is configured in functionapp.bicep (Azure Files would need shared keys, which are disabled)
  // checkov:skip=CKV_AZURE_222: false positive: checkov applies web-app checks to every Microsoft.Web/sites/config resource; this one holds only app settings, the site itself is configured in functionapp.bicep
  parent: site
  name: 'appsettings'
  properties: union(schedulerSettings, platformSettings, isFlex ? {} : elasticPremiumSettings)
}
