export { DeliveryTracker, type DeliverySettlement, type DeliveryWatch, type SharedCallers } from './callers';
export { ResultDeliveryController } from './result-delivery.controller';
export { ResultDeliveryModule, type ResultDeliveryDependencies } from './result-delivery.module';
export { hostResultDelivery, resultDeliveryService, sharedCallers } from './result-delivery-service';
