// Key Vault in RBAC mode holding the management API key hashes (the SCHEDULER_API_KEYS setting is a
// Key Vault reference to the secret below). Hashes, not keys: the plaintext keys are never stored.

@description('Azure region of the vault.')
param location string

@description('Tags applied to every resource.')
param tags object

@description('Key Vault name (3-24 characters).')
@minLength(3)
@maxLength(24)
param name string

@description('Name of the secret holding SCHEDULER_API_KEYS.')
param apiKeysSecretName string

@description('SCHEDULER_API_KEYS value (sha256:<hex>[@subs];...). Empty: the secret is not written by this deployment (set it with az keyvault secret set), so a redeployment never overwrites it.')
@secure()
param apiKeyHashes string = ''

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  // checkov:skip=CKV_AZURE_109: App Service resolves Key Vault references over the public endpoint unless the app is VNet-integrated; the vault is RBAC-only and holds hashes, not keys
  // checkov:skip=CKV_AZURE_189: same as CKV_AZURE_109: public network access is needed for Key Vault references without a VNet
  name: name
  location: location
  tags: tags
  properties: {
    tenantId: subscription().tenantId
    sku: {
      family: 'A'
      name: 'standard'
    }
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: 90
    enablePurgeProtection: true
    enabledForDeployment: false
    enabledForDiskEncryption: false
    enabledForTemplateDeployment: false
    publicNetworkAccess: 'Enabled'
    networkAcls: {
      bypass: 'AzureServices'
      defaultAction: 'Allow'
    }
  }
}

resource apiKeysSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (!empty(apiKeyHashes)) {
  // checkov:skip=CKV_AZURE_41: an expired secret would make the Key Vault reference fail and lock every client out; keys are rotated by replacing the hash list (docs/deploy.md), and the value holds hashes, not keys
  // checkov:skip=CKV_AZURE_114: false positive: contentType is set below; checkov does not look inside conditional (if) resources
  parent: vault
  name: apiKeysSecretName
  properties: {
    value: apiKeyHashes
    contentType: 'text/plain; SCHEDULER_API_KEYS entries (sha256 hashes)'
  }
}

output name string = vault.name
output id string = vault.id
output uri string = vault.properties.vaultUri
