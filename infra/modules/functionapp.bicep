// The function app: a Linux plan (Flex Consumption by default, Elastic Premium on request), the site
// with a system-assigned managed identity, HTTPS only, TLS 1.2, FTP and basic publishing credentials
// off, and optionally App Service Authentication (Microsoft Entra ID) in front of every route.
// App settings are applied afterwards by appsettings.bicep, once the identity has its roles.

@description('Azure region of the resources.')
param location string

@description('Tags applied to every resource.')
param tags object

@description('Function app name.')
param name string

@description('App Service plan name.')
param planName string

@description('FlexConsumption (FC1) or ElasticPremium (EP1-EP3).')
@allowed([
  'FlexConsumption'
  'ElasticPremium'
])
param hostingPlan string = 'FlexConsumption'

@description('Elastic Premium SKU, used when hostingPlan is ElasticPremium.')
@allowed([
  'EP1'
  'EP2'
  'EP3'
])
param elasticPremiumSku string = 'EP1'

@description('Python version of the app (one pyproject.toml requires-python admits).')
param pythonVersion string

@description('Blob endpoint of the storage account (Flex Consumption deployment package).')
param storageBlobEndpoint string

@description('Blob container of the Flex Consumption deployment package.')
param deploymentContainerName string

@description('Flex Consumption: maximum number of instances.')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int = 100

@description('Flex Consumption: memory of an instance in MB.')
@allowed([
  512
  2048
  4096
])
param instanceMemoryMB int = 2048

@description('Flex Consumption: always-ready instances, [{name, instanceCount}] with name a function group (http, blob, durable) or function:<name> (main.bicep builds the list from the functions the app declares).')
param alwaysReady array = []

@description('Flex Consumption: HTTP requests one instance of the http group is given at once (scaleAndConcurrency.triggers.http.perInstanceConcurrency); host.json extensions.http.maxConcurrentRequests has the same value.')
@minValue(1)
@maxValue(1000)
param httpPerInstanceConcurrency int = 16

@description('Elastic Premium: always-ready (minimum) instances. At least 1: every instance runs every function, so one always polls the execution queues and may hold the timers\' lock.')
@minValue(1)
@maxValue(20)
param minimumElasticInstanceCount int = 1

@description('Elastic Premium: maximum number of instances.')
@minValue(1)
@maxValue(100)
param maximumElasticWorkerCount int = 20

@description('Put App Service Authentication (Microsoft Entra ID) in front of the API.')
param enableAppServiceAuth bool = false

@description('Client (application) id of the Entra app registration that protects the API.')
param authClientId string = ''

@description('Tenant of the Entra app registration.')
param authTenantId string = subscription().tenantId

@description('Accepted token audiences; empty = api://<authClientId>.')
param authAllowedAudiences array = []

var isFlex = hostingPlan == 'FlexConsumption'

// The app's health endpoint: GET /health, anonymous (routePrefix is empty), 200 healthy and 503 not.
// App Service's health check pings it on every instance each minute, takes an instance that keeps failing
// out of the load balancer and replaces it after an hour. Microsoft supports it for function apps on
// Elastic Premium and Dedicated plans only: "Health check isn't an option for the Flex Consumption and
// Consumption plans" (Azure Functions, configure-monitoring), so it is not set on Flex Consumption.
var healthCheckPath = '/health'

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  // checkov:skip=CKV_AZURE_225: zone redundancy is available only in some regions (and for Flex Consumption needs a supported region); left to the operator rather than failing deployments elsewhere
  name: planName
  location: location
  tags: tags
  kind: isFlex ? 'functionapp' : 'elastic'
  sku: isFlex ? {
    name: 'FC1'
    tier: 'FlexConsumption'
  } : {
    name: elasticPremiumSku
    tier: 'ElasticPremium'
  }
  properties: {
    reserved: true
    maximumElasticWorkerCount: isFlex ? null : maximumElasticWorkerCount
  }
}

var flexConfig = {
  deployment: {
    storage: {
      type: 'blobContainer'
      value: '${storageBlobEndpoint}${deploymentContainerName}'
      authentication: {
        type: 'SystemAssignedIdentity'
      }
    }
  }
  scaleAndConcurrency: {
    maximumInstanceCount: maximumInstanceCount
    instanceMemoryMB: instanceMemoryMB
    // Instances kept running whatever the load (docs/deploy.md "What each plan keeps"): the scale controller
    // counts only visible queue messages, and every execution message is invisible until its due second.
    alwaysReady: alwaysReady
    triggers: {
      http: {
        perInstanceConcurrency: httpPerInstanceConcurrency
      }
    }
  }
  runtime: {
    name: 'python'
    version: pythonVersion
  }
}

resource site 'Microsoft.Web/sites@2024-04-01' = {
  // checkov:skip=CKV_AZURE_17: clients authenticate with API keys (and optionally Entra ID tokens); Azure Scheduler clients never presented client certificates
  // checkov:skip=CKV_AZURE_222: the management API is public, as Azure Scheduler's was; every request needs an API key (and, when enabled, an Entra token). Private access needs a VNet this template does not impose
  // checkov:skip=CKV_AZURE_212: instance minimums are set per plan, where the check does not look: on Flex Consumption functionAppConfig.scaleAndConcurrency.alwaysReady (per function), on Elastic Premium minimumElasticInstanceCount
  name: name
  location: location
  tags: union(tags, {
    'azd-service-name': 'api'
  })
  kind: 'functionapp,linux'
  identity: {
    type: 'SystemAssigned'
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    clientCertEnabled: false
    publicNetworkAccess: 'Enabled'
    siteConfig: {
      minTlsVersion: '1.2'
      scmMinTlsVersion: '1.2'
      ftpsState: 'Disabled'
      http20Enabled: true
      remoteDebuggingEnabled: false
      linuxFxVersion: isFlex ? null : 'Python|${pythonVersion}'
      healthCheckPath: isFlex ? null : healthCheckPath
      minimumElasticInstanceCount: isFlex ? null : minimumElasticInstanceCount
      functionAppScaleLimit: isFlex ? null : maximumElasticWorkerCount
    }
    functionAppConfig: isFlex ? flexConfig : null
  }
}

// FTP and basic (user name/password) publishing credentials off: azd and az deploy with Entra ID.
resource ftpCredentials 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2024-04-01' = {
  parent: site
  name: 'ftp'
  properties: {
    allow: false
  }
}

resource scmCredentials 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2024-04-01' = {
  parent: site
  name: 'scm'
  properties: {
    allow: false
  }
}

// Optional App Service Authentication (Easy Auth) with Microsoft Entra ID: when enabled, every request
// needs a valid Entra token for the API's app registration before it reaches the app. The app validates
// tokens itself (SCHEDULER_ENTRA_TENANT_ID, docs/security.md), so this is an outer gate only; it passes
// the Authorization header through, and API-key-only callers are stopped by it. Always deployed (enabled or not), so that switching it off takes effect too.
resource authSettings 'Microsoft.Web/sites/config@2024-04-01' = {
  // checkov:skip=CKV_AZURE_13: false positive: checkov applies web-app checks to every Microsoft.Web/sites/config resource; this one holds only the App Service Authentication settings, the site itself is configured in functionapp.bicep
  // checkov:skip=CKV_AZURE_63: false positive: checkov applies web-app checks to every Microsoft.Web/sites/config resource; this one holds only the App Service Authentication settings, the site itself is configured in functionapp.bicep
  // checkov:skip=CKV_AZURE_65: false positive: checkov applies web-app checks to every Microsoft.Web/sites/config resource; this one holds only the App Service Authentication settings, the site itself is configured in functionapp.bicep
  // checkov:skip=CKV_AZURE_66: false positive: checkov applies web-app checks to every Microsoft.Web/sites/config resource; this one holds only the App Service Authentication settings, the site itself is configured in functionapp.bicep
  // checkov:skip=CKV_AZURE_80: false positive: checkov applies web-app checks to every Microsoft.Web/sites/config resource; this one holds only the App Service Authentication settings, the site itself is configured in functionapp.bicep (and the app is Python, not .NET)
  // checkov:skip=CKV_AZURE_88: false positive: checkov applies web-app checks to every Microsoft.Web/sites/config resource; this one holds only the App Service Authentication settings, the site itself is configured in functionapp.bicep (Azure Files would need shared keys, which are disabled)
  // checkov:skip=CKV_AZURE_222: false positive: checkov applies web-app checks to every Microsoft.Web/sites/config resource; this one holds only the App Service Authentication settings, the site itself is configured in functionapp.bicep
  parent: site
  name: 'authsettingsV2'
  properties: {
    platform: {
      enabled: enableAppServiceAuth
    }
    globalValidation: {
      requireAuthentication: true
      unauthenticatedClientAction: 'Return401'
    }
    httpSettings: {
      requireHttps: true
    }
    identityProviders: {
      azureActiveDirectory: {
        enabled: enableAppServiceAuth
        registration: {
          clientId: authClientId
          openIdIssuer: '${environment().authentication.loginEndpoint}${authTenantId}/v2.0'
        }
        validation: {
          allowedAudiences: empty(authAllowedAudiences) ? [
            'api://${authClientId}'
            authClientId // v2.0 access tokens carry the client id as their audience
          ] : authAllowedAudiences
        }
      }
    }
    login: {
      tokenStore: {
        enabled: false
      }
    }
  }
}

output name string = site.name
output id string = site.id
output principalId string = site.identity.principalId
output defaultHostName string = site.properties.defaultHostName
output isFlexConsumption bool = isFlex
