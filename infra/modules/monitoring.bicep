// Monitoring: a Log Analytics workspace and a workspace-based Application Insights component.
// Local (instrumentation-key) authentication is disabled: the function app sends telemetry with its
// managed identity (role Monitoring Metrics Publisher, assigned in roles.bicep) and the app setting
// APPLICATIONINSIGHTS_AUTHENTICATION_STRING = 'Authorization=AAD'.

@description('Azure region of the resources.')
param location string

@description('Tags applied to every resource.')
param tags object

@description('Name of the Log Analytics workspace.')
param logAnalyticsName string

@description('Name of the Application Insights component.')
param appInsightsName string

@description('Days of log retention in the workspace.')
@minValue(30)
@maxValue(730)
param retentionInDays int = 30

resource workspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: logAnalyticsName
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: retentionInDays
    features: {
      disableLocalAuth: true
    }
  }
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: appInsightsName
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: workspace.id
    DisableLocalAuth: true
    IngestionMode: 'LogAnalytics'
  }
}

output appInsightsName string = appInsights.name
output appInsightsId string = appInsights.id
output appInsightsConnectionString string = appInsights.properties.ConnectionString
output logAnalyticsWorkspaceId string = workspace.id
