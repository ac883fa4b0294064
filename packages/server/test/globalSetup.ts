export { default } from "../../postgres/test/support/globalSetup.js"
