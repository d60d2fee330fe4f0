package controller

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// FieldManager names the controller in managedFields.
const FieldManager = "stagehand-controller"

func createOptions() metav1.CreateOptions { return metav1.CreateOptions{FieldManager: FieldManager} }
func updateOptions() metav1.UpdateOptions { return metav1.UpdateOptions{FieldManager: FieldManager} }
