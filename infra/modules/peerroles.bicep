// The role one region's app needs on an account of the other region or of the witness (docs/regions.md): read
// the other region's tables (the standby's copy pulls; it never writes there), or keep the witness's blob lease.
// Names are guid(scope, principal, roleDefinitionId), so redeploying is idempotent.

@description('The storage account the role is granted on (in this resource group).')
param storageAccountName string

@description('The principal (a function app\'s system-assigned identity) granted the role.')
param principalId string

@description('tables: read the other region\'s catalog; blobs: keep the witness\'s lease.')
@allowed([
  'tables'
  'blobs'
])
param access string

// Storage Table Data Reader
var storageTableDataReader = '76199698-9eea-4c19-bc75-cec21354c6b6'
// Storage Blob Data Contributor
var storageBlobDataContributor = 'ba92f5b4-2d11-453d-a403-e96b0029c9fe'

resource account 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

// Role: Storage Table Data Reader (the standby reads the active region's job collections, jobs and records)
resource tableReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (access == 'tables') {
  name: guid(account.id, principalId, storageTableDataReader)
  scope: account
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataReader)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

// Role: Storage Blob Data Contributor (the witness's container and its blob lease)
resource witnessLease 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (access == 'blobs') {
  name: guid(account.id, principalId, storageBlobDataContributor)
  scope: account
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageBlobDataContributor)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}
