export { default } from "./support/globalSetup.js"
