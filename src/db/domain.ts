// The domain's words the storage layer uses: the one file of src/db that imports them.
export type { EventType } from "../events/types";
export { statusesBefore, type MessageStatus } from "../messages/status";
export type { OptOutType, PendingMessage } from "../network/driver";
