// Role assignments of the function app's system-assigned managed identity (least privilege, each on
// the one resource it needs), and the optional roles of the operator (API key secret, Elastic Premium
// package). Names are guid(scope, principal, roleDefinitionId) so that redeploying is idempotent. The
// Service Bus role is in servicebus.bicep, deployed only with the namespace. With splitStorage the
// history tables' and the execution queues' accounts get the table and queue roles too.

@description('Principal (object) id of the function app managed identity.')
param principalId string

@description('Storage account of the host and of the scheduler tables and queues.')
param storageAccountName string

@description('splitStorage: storage account of the history tables (Executions, JobHistory). Empty: none (they are in storageAccountName).')
param historyStorageAccountName string = ''

@description('splitStorage: storage account of the execution queues and their -poison queues. Empty: none (they are in storageAccountName).')
param executionStorageAccountName string = ''

@description('Key Vault holding the API key hashes.')
param keyVaultName string

@description('Application Insights component (local auth disabled).')
param appInsightsName string

@description('Optional: object id of a user or group that may manage the API key secret (azd sets AZURE_PRINCIPAL_ID). Empty: none.')
param secretsOfficerPrincipalId string = ''

@description('Principal type of secretsOfficerPrincipalId.')
@allowed([
  'User'
  'Group'
  'ServicePrincipal'
])
param secretsOfficerPrincipalType string = 'User'

@description('Blob container of the deployment package.')
param deploymentContainerName string

@description('Optional (Elastic Premium): object id of the user or group that uploads the package to the deployment container. Empty: none.')
param packageUploaderPrincipalId string = ''

@description('Principal type of packageUploaderPrincipalId.')
@allowed([
  'User'
  'Group'
  'ServicePrincipal'
])
param packageUploaderPrincipalType string = 'User'

// Storage Table Data Contributor
var storageTableDataContributor = '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
// Storage Queue Data Contributor
var storageQueueDataContributor = '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
// Storage Blob Data Owner
var storageBlobDataOwner = 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
// Key Vault Secrets User
var keyVaultSecretsUser = '4633458b-17de-408a-b874-0445c86b69e6'
// Key Vault Secrets Officer
var keyVaultSecretsOfficer = 'b86a8fe4-44ce-4948-aee5-eccb2c155cd7'
// Monitoring Metrics Publisher
var monitoringMetricsPublisher = '3913510d-42f4-4e42-8a64-420c390055eb'
// Storage Blob Data Contributor
var storageBlobDataContributor = 'ba92f5b4-2d11-453d-a403-e96b0029c9fe'

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource historyStorage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = if (!empty(historyStorageAccountName)) {
  name: historyStorageAccountName
}

resource executionStorage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = if (!empty(executionStorageAccountName)) {
  name: executionStorageAccountName
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' existing = {
  parent: storage
  name: 'default'
}

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = {
  parent: blobService
  name: deploymentContainerName
}

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' existing = {
  name: keyVaultName
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

// Role: Storage Table Data Contributor (job collections, jobs, due index, history, claims).
resource tableRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, principalId, storageTableDataContributor)
  scope: storage
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataContributor)
  }
}

// Role: Storage Queue Data Contributor (scan and execution queues, the host's queue triggers).
resource queueRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, principalId, storageQueueDataContributor)
  scope: storage
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageQueueDataContributor)
  }
}

// Role: Storage Table Data Contributor (splitStorage: the history tables, Executions and JobHistory, in their own account).
resource historyTableRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(historyStorageAccountName)) {
  name: guid(historyStorage.id, principalId, storageTableDataContributor)
  scope: historyStorage
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataContributor)
  }
}

// Role: Storage Queue Data Contributor (splitStorage: the execution queues and their -poison queues in their own account; the host's execution queue triggers, connection SchedulerExecutionStorage).
resource executionQueueRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(executionStorageAccountName)) {
  name: guid(executionStorage.id, principalId, storageQueueDataContributor)
  scope: executionStorage
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageQueueDataContributor)
  }
}

// Role: Storage Blob Data Owner (the Functions host: timer leases, keys, the deployment package).
resource blobRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, principalId, storageBlobDataOwner)
  scope: storage
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageBlobDataOwner)
  }
}

// Role: Key Vault Secrets User (resolves the SCHEDULER_API_KEYS Key Vault reference).
resource secretsUserRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(vault.id, principalId, keyVaultSecretsUser)
  scope: vault
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', keyVaultSecretsUser)
  }
}

// Role: Monitoring Metrics Publisher (telemetry to Application Insights with Entra ID auth).
resource telemetryRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(appInsights.id, principalId, monitoringMetricsPublisher)
  scope: appInsights
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', monitoringMetricsPublisher)
  }
}

// Role: Key Vault Secrets Officer, for the operator who manages the API key hashes (optional).
resource secretsOfficerRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(secretsOfficerPrincipalId)) {
  name: guid(vault.id, secretsOfficerPrincipalId, keyVaultSecretsOfficer)
  scope: vault
  properties: {
    principalId: secretsOfficerPrincipalId
    principalType: secretsOfficerPrincipalType
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', keyVaultSecretsOfficer)
  }
}

// Role: Storage Blob Data Contributor, for the operator who uploads the Elastic Premium package (optional; on the deployment container only).
resource packageUploaderRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(packageUploaderPrincipalId)) {
  name: guid(deploymentContainer.id, packageUploaderPrincipalId, storageBlobDataContributor)
  scope: deploymentContainer
  properties: {
    principalId: packageUploaderPrincipalId
    principalType: packageUploaderPrincipalType
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageBlobDataContributor)
  }
}
