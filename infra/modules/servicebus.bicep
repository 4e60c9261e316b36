// Optional Service Bus namespace for jobs whose action sends to a Service Bus queue or topic with the
// function app's managed identity. Local (SAS) authentication is disabled.

@description('Azure region of the namespace.')
param location string

@description('Tags applied to every resource.')
param tags object

@description('Namespace name (6-50 characters).')
@minLength(6)
@maxLength(50)
param name string

@description('Namespace tier. Standard is needed for topics.')
@allowed([
  'Basic'
  'Standard'
  'Premium'
])
param serviceBusSkuName string = 'Standard'

@description('Principal (object) id of the function app managed identity.')
param principalId string

// Azure Service Bus Data Sender
var serviceBusDataSenderRoleId = '69a216fc-b8fb-44d8-bc22-1f3c2cd27a39'

resource namespace 'Microsoft.ServiceBus/namespaces@2022-10-01-preview' = {
  name: name
  location: location
  tags: tags
  sku: {
    name: serviceBusSkuName
    tier: serviceBusSkuName
  }
  properties: {
    minimumTlsVersion: '1.2'
    disableLocalAuth: true
    publicNetworkAccess: 'Enabled'
  }
}

// Role: Azure Service Bus Data Sender, for the function app on the whole namespace.
resource senderRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(namespace.id, principalId, serviceBusDataSenderRoleId)
  scope: namespace
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', serviceBusDataSenderRoleId)
  }
}

output name string = namespace.name
output id string = namespace.id
output endpoint string = namespace.properties.serviceBusEndpoint
