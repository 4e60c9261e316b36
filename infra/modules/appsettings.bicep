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

var isFlex = hostingPlan == 'FlexConsumption'

var platformSettings = {
  APPLICATIONINSIGHTS_CONNECTION_STRING: appInsightsConnectionString
  // Local auth is disabled on the component: send telemetry with the managed identity.
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'Authorization=AAD'
}

// Elastic Premium without Azure Files (which would need shared keys): run from the deployment package.
var elasticPremiumSettings = {
  FUNCTIONS_WORKER_RUNTIME: 'python'
  FUNCTIONS_EXTENSION_VERSION: '~4'
  WEBSITE_RUN_FROM_PACKAGE: '1'
  SCM_DO_BUILD_DURING_DEPLOYMENT: 'true'
  ENABLE_ORYX_BUILD: 'true'
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
