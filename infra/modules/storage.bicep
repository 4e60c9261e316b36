// Storage account of the function app: the Functions host (timer leases, deployment package) and the
// scheduler's own tables and queues. Keys are disabled (allowSharedKeyAccess: false): every client,
// the host included, authenticates with Microsoft Entra ID (the app's managed identity).
// With splitStorage, main.bicep deploys this module twice more, with the same hardening: the history
// tables' account (tables only) and the execution queues' account (queues only), without a deployment
// container.

@description('Azure region of the account.')
param location string

@description('Tags applied to every resource.')
param tags object

@description('Storage account name (3-24 lowercase letters and digits).')
@minLength(3)
@maxLength(24)
param name string

@description('Replication of the account (geo-redundant by default: the scheduler state lives here).')
@allowed([
  'Standard_LRS'
  'Standard_ZRS'
  'Standard_GRS'
  'Standard_GZRS'
  'Standard_RAGRS'
  'Standard_RAGZRS'
])
param storageSkuName string = 'Standard_GRS'

@description('Prefix of every table name (SCHEDULER_TABLE_PREFIX).')
param tablePrefix string = ''

@description('Base names of the scheduler tables (scheduler_core/storage/names.py TABLES).')
param tableNames array

@description('Names of the queues the scheduler uses, poison queues included.')
param queueNames array

@description('Blob container holding the Flex Consumption deployment package. Empty: none (the history and execution accounts).')
param deploymentContainerName string = ''

@description('Days deleted blobs and containers are kept (soft delete).')
@minValue(1)
@maxValue(365)
param deleteRetentionDays int = 7

resource account 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  // checkov:skip=CKV_AZURE_35: a Flex Consumption app without VNet integration reaches storage over the public endpoint; shared keys are disabled, so only Entra ID principals with a data role get in
  // checkov:skip=CKV_AZURE_59: same as CKV_AZURE_35: the public endpoint is needed without a VNet; access is Entra ID only (allowSharedKeyAccess false, no public blob access)
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: storageSkuName
  }
  properties: {
    accessTier: 'Hot'
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    allowBlobPublicAccess: false
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    allowCrossTenantReplication: false
    isLocalUserEnabled: false
    isSftpEnabled: false
    publicNetworkAccess: 'Enabled'
    networkAcls: {
      bypass: 'AzureServices'
      defaultAction: 'Allow'
    }
    encryption: {
      keySource: 'Microsoft.Storage'
      requireInfrastructureEncryption: true
      services: {
        blob: {
          enabled: true
          keyType: 'Account'
        }
        file: {
          enabled: true
          keyType: 'Account'
        }
        queue: {
          enabled: true
          keyType: 'Account'
        }
        table: {
          enabled: true
          keyType: 'Account'
        }
      }
    }
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: account
  name: 'default'
  properties: {
    deleteRetentionPolicy: {
      enabled: true
      days: deleteRetentionDays
    }
    containerDeleteRetentionPolicy: {
      enabled: true
      days: deleteRetentionDays
    }
  }
}

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = if (!empty(deploymentContainerName)) {
  parent: blobService
  name: deploymentContainerName
  properties: {
    publicAccess: 'None'
  }
}

resource tableService 'Microsoft.Storage/storageAccounts/tableServices@2023-05-01' = {
  parent: account
  name: 'default'
}

// Every table of scheduler_core/storage/names.py TABLES, with the configured prefix.
resource tables 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' = [for table in tableNames: {
  parent: tableService
  name: '${tablePrefix}${table}'
}]

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' = {
  parent: account
  name: 'default'
}

// The scan and execution queues and their -poison queues (the host would create those on first use,
// but with least-privilege roles and no keys it is better that they exist from the start).
resource queues 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = [for queue in queueNames: {
  parent: queueService
  name: queue
}]

output name string = account.name
output id string = account.id
output blobEndpoint string = account.properties.primaryEndpoints.blob
output tableEndpoint string = account.properties.primaryEndpoints.table
output queueEndpoint string = account.properties.primaryEndpoints.queue
