// Two regions (docs/regions.md): main.bicep deployed in the primary region and again in the standby region, each
// with its own storage, identity, key vault and the same hardening; a witness account in a third region holding the
// lease that names the active region; and the roles each app needs beyond its own region: Storage Table Data
// Reader on the other region's account (the standby copies by reading) and Storage Blob Data Contributor on the
// witness's account. Each app's settings name its region, the witness's blob endpoint, the other region's table
// endpoint and the primary region (the one the lease is handed back to).
//
//   az deployment sub create -l <primary> -f infra/regions.bicep \
//     -p environmentName=<name> location=<primary> standbyRegion=<paired region> witnessRegion=<third region>

targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('Name of the environment: the resource groups are rg-<name>-<region> and rg-<name>-witness.')
param environmentName string

@minLength(1)
@description('The primary region: active at first, and the one the lease is handed back to after an outage.')
param location string

@minLength(1)
@description('The standby region (the primary\'s paired region): it copies the primary\'s catalog and takes over when the primary is lost.')
param standbyRegion string

@minLength(1)
@description('The witness\'s region: a third region, so that losing either region (or the link between them) leaves the witness.')
param witnessRegion string

@description('Hosting plan of both function apps (see main.bicep).')
@allowed([
  'FlexConsumption'
  'ElasticPremium'
])
param hostingPlan string = 'FlexConsumption'

@secure()
@description('SCHEDULER_API_KEYS of both apps (see main.bicep).')
param apiKeyHashes string = ''

@description('Object id of the deploying user (see main.bicep), in both regions.')
param principalId string = ''

@minValue(0)
@maxValue(86400)
@description('SCHEDULER_REGION_HANDBACK_SECONDS: how long the primary\'s copy must be current before the standby hands the lease back (0: only by an operator).')
param handbackSeconds int = 600

// main.bicep's names, computed the same way, so that each region's settings can name the other's account.
var primaryStorage = 'st${toLower(uniqueString(subscription().id, environmentName, location))}'
var standbyStorage = 'st${toLower(uniqueString(subscription().id, environmentName, standbyRegion))}'
var witnessStorage = 'stw${toLower(uniqueString(subscription().id, environmentName, witnessRegion, 'witness'))}'
var storageSuffix = environment().suffixes.storage
var primaryGroup = 'rg-${environmentName}-${location}'
var standbyGroup = 'rg-${environmentName}-${standbyRegion}'
var tags = {
  'azd-env-name': environmentName
}

resource witnessGroup 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: 'rg-${environmentName}-witness'
  location: witnessRegion
  tags: tags
}

// The witness's account: the same hardening as every account of the app (no shared keys, TLS 1.2, no public blob
// access); the app creates its container (scheduler-witness) on first use.
module witness 'modules/storage.bicep' = {
  name: 'witness-storage'
  scope: witnessGroup
  params: {
    location: witnessRegion
    tags: tags
    name: witnessStorage
    storageSkuName: 'Standard_ZRS'
    tableNames: []
    queueNames: []
  }
}

module primary 'main.bicep' = {
  name: 'region-${location}'
  params: {
    environmentName: environmentName
    location: location
    resourceGroupName: primaryGroup
    hostingPlan: hostingPlan
    apiKeyHashes: apiKeyHashes
    principalId: principalId
    regionName: location
    primaryRegion: location
    handbackSeconds: handbackSeconds
    witnessBlobServiceUri: 'https://${witnessStorage}.blob.${storageSuffix}'
    peerTableServiceUri: 'https://${standbyStorage}.table.${storageSuffix}'
  }
}

module standby 'main.bicep' = {
  name: 'region-${standbyRegion}'
  params: {
    environmentName: environmentName
    location: standbyRegion
    resourceGroupName: standbyGroup
    hostingPlan: hostingPlan
    apiKeyHashes: apiKeyHashes
    principalId: principalId
    regionName: standbyRegion
    primaryRegion: location
    handbackSeconds: handbackSeconds
    witnessBlobServiceUri: 'https://${witnessStorage}.blob.${storageSuffix}'
    peerTableServiceUri: 'https://${primaryStorage}.table.${storageSuffix}'
  }
}

// The primary reads the standby's tables (after an outage it copies what the standby took), and the other way.
module primaryReadsStandby 'modules/peerroles.bicep' = {
  name: 'reads-${standbyRegion}'
  scope: resourceGroup(standbyGroup)
  dependsOn: [
    standby
  ]
  params: {
    storageAccountName: standbyStorage
    principalId: primary.outputs.SCHEDULER_PRINCIPAL_ID
    access: 'tables'
  }
}

module standbyReadsPrimary 'modules/peerroles.bicep' = {
  name: 'reads-${location}'
  scope: resourceGroup(primaryGroup)
  dependsOn: [
    primary
  ]
  params: {
    storageAccountName: primaryStorage
    principalId: standby.outputs.SCHEDULER_PRINCIPAL_ID
    access: 'tables'
  }
}

module primaryWitness 'modules/peerroles.bicep' = {
  name: 'witness-${location}'
  scope: witnessGroup
  dependsOn: [
    witness
  ]
  params: {
    storageAccountName: witnessStorage
    principalId: primary.outputs.SCHEDULER_PRINCIPAL_ID
    access: 'blobs'
  }
}

module standbyWitness 'modules/peerroles.bicep' = {
  name: 'witness-${standbyRegion}'
  scope: witnessGroup
  dependsOn: [
    witness
  ]
  params: {
    storageAccountName: witnessStorage
    principalId: standby.outputs.SCHEDULER_PRINCIPAL_ID
    access: 'blobs'
  }
}

output SCHEDULER_PRIMARY_ENDPOINT string = primary.outputs.SCHEDULER_ENDPOINT
output SCHEDULER_STANDBY_ENDPOINT string = standby.outputs.SCHEDULER_ENDPOINT
output SCHEDULER_WITNESS_STORAGE_ACCOUNT string = witnessStorage
